package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// Two boards on one database whose clocks disagree by more than the lease
// and presence TTLs: board B runs skewSize ahead of the machine's clock,
// or behind it, through the board's test seam (CORKBOARD_TEST_CLOCK_OFFSET,
// testclock.go), and board A on time. The cells reach the boards through
// a round-robin proxy, as reps behind a load balancer would, so that
// either board writes their heartbeats and reports; the API client and the
// rollouts go through B.
//
// First A converges and B is skewed, then A is restarted so that B takes
// the lease over and converges skewed, with A back beside it. In each
// phase the cells run quietly for a while, then a rollout runs. Every
// 50 ms the spec looks at both boards' corkboard_convergence_lease_held
// and at the LRP's rows, and it reads the boards' pass logs after:
//
//   - at most one board owns the lease at any look;
//   - no instance is marked SUSPECT (no pass plans mark_suspect, no look
//     sees a SUSPECT row) and none is replaced (each index keeps one
//     instance guid per definition);
//   - both rollouts complete, with the invariants of the rollout watch
//     (rollout_failover_e2e_test.go) intact throughout, and no sooner
//     than min_ready allows.
//
// A board that judged time by its machine's clock failed all but the
// first point: B behind wrote heartbeats A read as long expired, and B
// ahead read A's heartbeats as expired (79 to 270 SUSPECT marks and 78
// to 250 replacements per run), and a since written by a clock behind
// the judge's let rollouts skip min_ready. Boards keep their times on the
// database's clock instead (internal/dbclock). SQLite is left out: its
// file is not shared between machines.
var _ = Describe("Two boards whose clocks disagree", Label("chaos"), func() {
	ctx := context.Background()
	const (
		guid  = "skewed"
		count = 12
		// min_ready makes each rollout step wait, so that the rollout runs
		// over several passes and presence TTLs.
		minReadyMs = 500
		// quiet is how long each phase watches the cells before its
		// rollout: several presence TTLs and skews.
		quiet = 5 * time.Second
	)
	presenceTTL, leaseTTL := mustDuration(skewPresenceTTL), mustDuration(e2eLeaseTTL)
	// The skew is three times the longer of the two TTLs: 3 × 3 s = 9 s,
	// so that a board judging by its own clock reads every time the other
	// wrote as long past (or far ahead).
	skewSize := 3 * max(presenceTTL, leaseTTL)

	for _, dialect := range testdb.MustDialects() {
		if dialect == testdb.SQLite {
			continue
		}
		for _, skew := range []time.Duration{skewSize, -skewSize} {
			if !fullChaos() && (skew > 0) != (dialect == testdb.Postgres) {
				continue // make test: Postgres ahead, MySQL behind
			}
			It(fmt.Sprintf("lets one converge, marks nothing SUSPECT and completes rollouts, with board B %s off, on %s", skew, dialect), func() {
				database := newDatabase(dialect)
				boards := &skewedBoards{}
				boards.a = startBoardWithEnv(database, "board-a", nil)
				Eventually(func() float64 { return boards.a.metric(leaseHeldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
				boards.b = startBoardWithEnv(database, "board-b", []string{testClockOffsetEnv + "=" + skew.String()})
				Expect(string(boards.b.session.Out.Contents())).To(ContainSubstring(`"bbs.test-clock-offset"`), "the seam shifted board B's clock")
				sessions := []*gexec.Session{boards.a.session, boards.b.session}

				proxy := newRoundRobin(boards)
				api := boards.b.client()
				Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
				behindProxy := &runningBoard{url: proxy.URL}
				cells := []*simcell.Cell{
					startCell(behindProxy, "cell-a", "z1"),
					startCell(behindProxy, "cell-b", "z2"),
					startCell(behindProxy, "cell-c", "z3"),
				}
				_, err := api.DesireLRP(ctx, lrpSpec(guid, "apps", count))
				Expect(err).NotTo(HaveOccurred())
				Eventually(runningOn(boards.b, guid, "v1")).WithTimeout(convergeLimit).Should(Equal(count))

				lease := watchLease(boards)
				rows := watchSkewedRows(api, guid, count)
				invariants := watchRollout(boards.b, guid, count, cells)
				var rolloutTimes []string
				var rolloutTook []time.Duration
				rollout := func(version int) string {
					GinkgoHelper()
					began := time.Now()
					id := rollTo(api, guid, count, version, minReadyMs)
					Eventually(func() (*models.RolloutStatus, error) { return api.RolloutStatus(ctx, guid) }).WithTimeout(2 * convergeLimit).Should(And(
						HaveField("State", models.RolloutStatus_COMPLETE),
						HaveField("ActiveDefinitionId", id),
						HaveField("HealthyDefinitionId", id),
						HaveField("UpdatedInstances", BeEquivalentTo(count)),
					))
					took := time.Since(began)
					rolloutTimes = append(rolloutTimes, fmt.Sprintf("v%d %s", version, took.Round(time.Millisecond)))
					rolloutTook = append(rolloutTook, took)
					return id
				}

				By("board A converges while board B's clock is " + skew.String() + " off")
				lease.phase("A converges")
				time.Sleep(quiet)
				rollout(2)

				By("board A restarts: board B takes the lease and converges skewed, A back beside it")
				lease.phase("handover")
				boards.a.stop(syscall.SIGTERM)
				Eventually(func() float64 { return boards.b.metric(leaseHeldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
				lease.phase("B converges")
				boards.setA(startBoardWithEnv(database, "board-a", nil))
				sessions = append(sessions, boards.a.session)
				time.Sleep(quiet)
				v3ID := rollout(3)
				// One more quiet stretch after the rollout, with both boards up.
				time.Sleep(quiet)

				leaseReport := lease.stop()
				rowReport := rows.stop()
				invariantReport := invariants.stop()
				passes := passWrites(sessions)
				label := fmt.Sprintf(" (%s, board B %s, lease TTL %s, presence TTL %s)", dialect, skew, e2eLeaseTTL, skewPresenceTTL)
				AddReportEntry("lease owners"+label, leaseReport.String())
				AddReportEntry("suspect and replaced"+label, fmt.Sprintf("%s; passes planned mark_suspect %d, unassign %d, restart %d over %d passes",
					rowReport, passes["mark_suspect"], passes["unassign"], passes["restart"], passes["passes"]))
				AddReportEntry("rollout times"+label, strings.Join(rolloutTimes, ", "))
				AddReportEntry("rollout invariants"+label, invariantReport.String())
				AddReportEntry("proxied requests"+label, proxy.String())

				Expect(leaseReport.both).To(BeEmpty(), "both boards owned the lease at once")
				Expect(leaseReport.owners["A converges"]).To(ConsistOf("board-a"))
				Expect(leaseReport.owners["B converges"]).To(ConsistOf("board-b"))
				Expect(leaseReport.looks).To(BeNumerically(">", 100), "the lease watch looked often enough to mean something")
				Expect(passes["passes"]).To(BeNumerically(">", 20))
				Expect(passes["mark_suspect"]).To(BeZero(), "no pass marks an instance SUSPECT")
				Expect(rowReport.suspect).To(BeEmpty(), "no look sees a SUSPECT row")
				Expect(rowReport.replaced).To(BeEmpty(), "no index gets a second instance of one definition")
				Expect(invariantReport.violations).To(BeEmpty())
				Expect(proxy.served()).To(HaveEach(BeNumerically(">", 0)), "both boards served the cells")
				// min_ready holds on every board's clock: surge 2 and none
				// unavailable replace two indices at a time, each ready no
				// sooner than min_ready after it runs, so 12 indices take at
				// least 12 / 2 × 500 ms = 3 s. A board reading a since
				// written by a clock behind its own finds them ready at once.
				for i, took := range rolloutTook {
					Expect(took).To(BeNumerically(">=", count/2*minReadyMs*time.Millisecond), "rollout %d honoured min_ready", i+1)
				}

				By("every index ends on the last definition, one instance each")
				Eventually(views(boards.b, guid)).WithTimeout(convergeLimit).Should(HaveLen(count), "the RETIRING rows are gone")
				for i, lrp := range instances(boards.b, guid) {
					Expect(lrp.GetIndex()).To(BeEquivalentTo(i))
					Expect(lrp.GetPresence()).To(Equal(models.ActualLRP_ORDINARY))
					Expect(lrp.GetState()).To(Equal(models.ActualLRP_RUNNING))
					Expect(lrp.GetDefinitionId()).To(Equal(v3ID), "index %d", i)
				}
				Eventually(func() []string { return cellInstances(cells) }).WithTimeout(convergeLimit).Should(Equal(expectedOn(v3ID, count)))
			})
		}
	}
})

const leaseHeldSeries = "corkboard_convergence_lease_held"

// skewPresenceTTL is the presence TTL of the skewed boards: longer than
// the e2e settings' 1 s, since the spec fails on any SUSPECT mark, and on
// two loaded cores a heartbeat (a third of the TTL apart, through the
// proxy and either board) was seen to miss a 1 s TTL with no skew to
// blame. The skew stays three TTLs, so a board that judged by its own
// clock would still mark every instance.
const skewPresenceTTL = "3s"

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// startBoardWithEnv is startConvergingBoard with board id id and env added
// to the board's environment.
func startBoardWithEnv(database *testdb.Database, id string, env []string) *runningBoard {
	GinkgoHelper()
	cmd := exec.Command(bbsPath, "-config", convergingConfigFile(database, map[string]any{"board_id": id, "cell_presence_ttl": skewPresenceTTL}))
	cmd.Env = append(os.Environ(), env...)
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { session.Kill().Wait(startupLimit) })
	Eventually(session.Out).WithTimeout(startupLimit).Should(gbytes.Say(`bbs\.api-server\.listening`))
	match := listeningURL.FindSubmatch(session.Out.Contents())
	Expect(match).NotTo(BeNil(), "no URL in the listening line:\n%s", session.Out.Contents())
	return &runningBoard{session: session, url: string(match[1])}
}

// skewedBoards are the spec's two boards; A is replaced when it restarts.
type skewedBoards struct {
	mu   sync.Mutex
	a, b *runningBoard
}

func (s *skewedBoards) setA(a *runningBoard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a = a
}

// urls are A's and B's URLs, in that order.
func (s *skewedBoards) urls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []string{s.a.url, s.b.url}
}

// roundRobin is an HTTP proxy sending each request to the next board in
// turn, as a load balancer in front of the boards would; a board that
// refuses the connection (A while it restarts) is skipped for the other.
// The cells' calls are small and not streamed, so each is read whole.
type roundRobin struct {
	*httptest.Server
	boards *skewedBoards

	mu   sync.Mutex
	next int
	sent [2]int
	// failed counts requests no board took.
	failed int
}

func newRoundRobin(boards *skewedBoards) *roundRobin {
	p := &roundRobin{boards: boards}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	DeferCleanup(p.Close)
	return p
}

func (p *roundRobin) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	urls := p.boards.urls()
	p.mu.Lock()
	first := p.next
	p.next = (p.next + 1) % len(urls)
	p.mu.Unlock()
	for attempt := range len(urls) {
		i := (first + attempt) % len(urls)
		out, err := http.NewRequestWithContext(r.Context(), r.Method, urls[i]+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			continue // not sent: the next board may take it
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		p.mu.Lock()
		p.sent[i]++
		p.mu.Unlock()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	p.mu.Lock()
	p.failed++
	p.mu.Unlock()
	http.Error(w, "no board took the connection", http.StatusBadGateway)
}

func (p *roundRobin) served() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent[:]
}

func (p *roundRobin) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%d to board A, %d to board B, %d to neither", p.sent[0], p.sent[1], p.failed)
}

// leaseWatch reads corkboard_convergence_lease_held from both boards
// every 50 ms. The two reads of a look are not one instant, so a look
// reads A, B and A again, and counts both boards as holding only when all
// three say so: B held between two moments at which A did.
type leaseWatch struct {
	boards *skewedBoards

	mu     sync.Mutex
	report leaseReport
	now    string
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
}

type leaseReport struct {
	looks int
	// owners are the boards seen owning the lease, per phase.
	owners map[string][]string
	// changes counts looks whose owner differs from the previous one's.
	changes int
	// both are the looks at which both boards held it.
	both []string
	last string
}

func (r leaseReport) String() string {
	return fmt.Sprintf("%d looks, owners %v, %d changes of owner, %d looks with both owning", r.looks, r.owners, r.changes, len(r.both))
}

func watchLease(boards *skewedBoards) *leaseWatch {
	w := &leaseWatch{boards: boards, quit: make(chan struct{}), done: make(chan struct{}),
		report: leaseReport{owners: map[string][]string{}}}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			w.look()
			select {
			case <-w.quit:
				return
			case <-ticker.C:
			}
		}
	}()
	DeferCleanup(w.stop)
	return w
}

// phase names the looks from now on.
func (w *leaseWatch) phase(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = name
}

func (w *leaseWatch) look() {
	urls := w.boards.urls()
	a1, b, a2 := leaseHeld(urls[0]), leaseHeld(urls[1]), leaseHeld(urls[0])
	owner := ""
	switch {
	case a1 && a2:
		owner = "board-a"
	case b:
		owner = "board-b"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.report.looks++
	if a1 && b && a2 {
		w.report.both = append(w.report.both, time.Now().Format(time.StampMilli))
	}
	if owner != "" && w.now != "" && !slices.Contains(w.report.owners[w.now], owner) {
		w.report.owners[w.now] = append(w.report.owners[w.now], owner)
	}
	if owner != w.report.last {
		w.report.changes++
		w.report.last = owner
	}
}

func (w *leaseWatch) stop() leaseReport {
	w.once.Do(func() { close(w.quit) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.report
}

var leaseHeldLine = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(leaseHeldSeries) + ` (\S+)$`)

// leaseHeld reads the board's lease gauge; a board that does not answer
// (it is restarting) holds nothing it can use.
func leaseHeld(url string) bool {
	httpClient := http.Client{Timeout: time.Second}
	resp, err := httpClient.Get(url + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return false
	}
	match := leaseHeldLine.FindSubmatch(raw)
	if match == nil {
		return false
	}
	value, err := strconv.ParseFloat(string(match[1]), 64)
	return err == nil && value == 1
}

// skewedRowsWatch lists an LRP's rows every 50 ms and records every
// SUSPECT row and every index that got a second ORDINARY instance of one
// definition: a replacement, which nothing in the spec calls for.
type skewedRowsWatch struct {
	api  *client.Client
	guid string

	mu     sync.Mutex
	report skewedRowsReport
	// guids are the ORDINARY instance guids seen per index and
	// definition.
	guids map[string]string
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

type skewedRowsReport struct {
	looks    int
	suspect  []string
	replaced []string
}

func (r skewedRowsReport) String() string {
	return fmt.Sprintf("%d looks, %d SUSPECT rows seen, %d replacements", r.looks, len(r.suspect), len(r.replaced))
}

func watchSkewedRows(api *client.Client, guid string, count int) *skewedRowsWatch {
	w := &skewedRowsWatch{api: api, guid: guid, guids: map[string]string{}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			w.look()
			select {
			case <-w.quit:
				return
			case <-ticker.C:
			}
		}
	}()
	DeferCleanup(w.stop)
	return w
}

func (w *skewedRowsWatch) look() {
	rows, err := w.api.ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: w.guid})
	if err != nil {
		return // not a look: the board did not answer
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.report.looks++
	for _, lrp := range rows {
		switch lrp.GetPresence() {
		case models.ActualLRP_SUSPECT:
			w.report.suspect = append(w.report.suspect, fmt.Sprintf("%s index %d on %s", time.Now().Format(time.StampMilli), lrp.GetIndex(), lrp.GetCellId()))
		case models.ActualLRP_ORDINARY:
			if lrp.GetInstanceGuid() == "" {
				continue // not claimed yet: no instance to tell apart
			}
			key := fmt.Sprintf("%d %s", lrp.GetIndex(), lrp.GetDefinitionId())
			seen, ok := w.guids[key]
			switch {
			case !ok:
				w.guids[key] = lrp.GetInstanceGuid()
			case seen != lrp.GetInstanceGuid():
				w.report.replaced = append(w.report.replaced, fmt.Sprintf("%s index %d of %s: %s replaced by %s",
					time.Now().Format(time.StampMilli), lrp.GetIndex(), lrp.GetDefinitionId(), seen, lrp.GetInstanceGuid()))
				w.guids[key] = lrp.GetInstanceGuid()
			}
		}
	}
}

func (w *skewedRowsWatch) stop() skewedRowsReport {
	w.once.Do(func() { close(w.quit) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.report
}

// passWrites adds up, over the boards' logs, the writes each convergence
// pass planned (the "writes" of its bbs.convergence.pass.done line), by
// kind; "passes" counts the passes.
func passWrites(sessions []*gexec.Session) map[string]int {
	GinkgoHelper()
	totals := map[string]int{}
	for _, session := range sessions {
		lines := bufio.NewScanner(bytes.NewReader(session.Out.Contents()))
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			if !bytes.Contains(lines.Bytes(), []byte(`"bbs.convergence.pass.done"`)) {
				continue
			}
			var line struct {
				Data struct {
					Writes map[string]int `json:"writes"`
				} `json:"data"`
			}
			Expect(json.Unmarshal(lines.Bytes(), &line)).To(Succeed(), "%s", lines.Bytes())
			totals["passes"]++
			for kind, n := range line.Data.Writes {
				totals[kind] += n
			}
		}
		Expect(lines.Err()).NotTo(HaveOccurred())
	}
	return totals
}
