package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// The load spec of issue 26: a board with a short presence TTL, two
// simulated cells heartbeating, reporting and running an app, and a
// client desiring, getting and updating LRPs, while 1,100 connections
// trickle request bodies (a byte a second) and 100 connections read
// whole lists (a kilobyte a second), held for two presence TTLs. Every
// heartbeat and every call of the cells and of the client must succeed,
// no instance may turn SUSPECT, and the board's peak RSS must stay under
// 300 MB. The attackers come from other loopback addresses (other
// clients, on plain HTTP), 100 bodies and 10 lists from each: at the
// per-client caps; the board cuts each body at its body timeout (10s) and
// its attacker opens another connection at once. make test holds them for
// two TTLs of 5s on every dialect; make chaos (CORKBOARD_CHAOS=full) for
// two TTLs of 10s, through the cuts.
var _ = Describe("The board under a thousand slow clients", Label("chaos"), func() {
	const (
		slowBodies      = 1100
		bodiesPerClient = 100
		slowLists       = 100
		listsPerClient  = 10
		// bulkLRPs of bulkAnnotation bytes make a list of about 5 MB:
		// more than the sockets of a reader that stops buffer, so that
		// its stream stands mid-list.
		bulkLRPs       = 600
		bulkAnnotation = 8000
		maxRSSBytes    = 300 << 20
	)
	ttl := 5 * time.Second
	if fullChaos() {
		ttl = 10 * time.Second
	}

	for _, dialect := range testdb.MustDialects() {
		It("serves every heartbeat and client call, keeps every instance, and stays under 300 MB, on "+dialect, func() {
			ctx := context.Background()
			raiseFileLimit(4096)
			logPath := filepath.Join(GinkgoT().TempDir(), "bbs.log")
			logFile, err := os.Create(logPath)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(logFile.Close)
			board := startConvergingBoardWriting(logFile, newDatabase(dialect), map[string]any{"cell_presence_ttl": ttl.String()})
			api := board.client()
			address := strings.TrimPrefix(board.url, "http://")

			By("filling a domain with a list of about 5 MB")
			bulk := "bulk-" + dialect
			desireInParallel(api, bulk, bulkLRPs, bulkAnnotation)

			By("running an app on two cells")
			var heartbeats latencies
			var cellFailures atomic.Int64
			for _, id := range []string{"cell-a", "cell-b"} {
				startCell(board, id, "z1", func(c *simcell.Config) {
					c.OnHeartbeat = heartbeats.record
					c.Logf = func(format string, args ...any) {
						cellFailures.Add(1)
						fmt.Fprintf(GinkgoWriter, format+"\n", args...)
					}
				})
			}
			app := lrpSpec("app", "apps", 4)
			_, err = api.DesireLRP(ctx, app)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() int { return running(board, "app") }).WithTimeout(convergeLimit).Should(Equal(4))

			By("opening 1,100 slow bodies and 100 slow whole-list readers")
			attack, stopAttack := context.WithCancel(ctx)
			var bodyConns, listConns atomic.Int64
			var attackers sync.WaitGroup
			DeferCleanup(func() { stopAttack(); attackers.Wait() })
			for i := range slowBodies {
				ip := fmt.Sprintf("127.0.0.%d", 2+i/bodiesPerClient)
				attackers.Go(func() { trickleBody(attack, address, ip, &bodyConns) })
			}
			listBody := fmt.Sprintf(`{"domain": %q}`, bulk)
			for i := range slowLists {
				ip := fmt.Sprintf("127.0.1.%d", 1+i/listsPerClient)
				attackers.Go(func() { readSlowly(attack, address, ip, listBody, &listConns) })
			}
			Eventually(func() float64 { return board.inUse("body_readers") }).WithTimeout(convergeLimit).Should(BeNumerically(">=", slowBodies*9/10))
			Eventually(func() float64 { return board.inUse("list_streams") }).WithTimeout(convergeLimit).Should(BeNumerically(">=", slowLists*9/10))

			By(fmt.Sprintf("desiring, getting and updating for two presence TTLs (%s) meanwhile", 2*ttl))
			heartbeatsBefore := heartbeats.count()
			var calls latencies
			suspect := 0
			// What the attackers hold, sampled between the client's
			// rounds: the board cuts every body at its timeout (10s),
			// and the attacker opens another at once.
			var heldBodies, heldLists []float64
			for i, end := 0, time.Now().Add(2*ttl); time.Now().Before(end); i++ {
				guid := fmt.Sprintf("load-%d", i)
				calls.time(func() error { _, err := api.DesireLRP(ctx, lrpSpec(guid, "load", 0)); return err })
				calls.time(func() error { _, err := api.DesiredLRPByProcessGuid(ctx, guid); return err })
				annotation := "updated"
				calls.time(func() error {
					_, err := api.UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Annotation: &annotation})
					return err
				})
				calls.time(func() error {
					lrps, err := api.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: "app"})
					for _, lrp := range lrps {
						if lrp.GetPresence() == models.ActualLRP_SUSPECT {
							suspect++
						}
					}
					return err
				})
				heldBodies = append(heldBodies, board.inUse("body_readers"))
				heldLists = append(heldLists, board.inUse("list_streams"))
			}
			rss := peakRSS(board)
			stopAttack()
			attackers.Wait()

			figures := fmt.Sprintf("%s, presence TTL %s, held %s: slow bodies being read %s, slow list streams %s (connections opened: %d bodies, %d lists); client calls: %s; heartbeats during the hold: %d of %s; board peak RSS %.0f MB; refusals: %s",
				dialect, ttl, 2*ttl, spread(heldBodies), spread(heldLists), bodyConns.Load(), listConns.Load(), calls.summary(), heartbeats.count()-heartbeatsBefore, heartbeats.summary(), float64(rss)/(1<<20), board.refusals())
			AddReportEntry("figures", figures)
			fmt.Fprintln(GinkgoWriter, figures)

			Expect(calls.failures()).To(BeEmpty(), "client calls failed")
			Expect(heartbeats.failures()).To(BeEmpty(), "heartbeats failed")
			Expect(cellFailures.Load()).To(BeZero(), "cell calls failed (see the log)")
			Expect(heartbeats.count()-heartbeatsBefore).To(BeNumerically(">=", 2), "no heartbeat during the hold")
			Expect(suspect).To(BeZero(), "instances seen SUSPECT")
			Expect(running(board, "app")).To(Equal(4))
			Expect(rss).To(BeNumerically("<", maxRSSBytes))
			Expect(median(heldBodies)).To(BeNumerically(">=", slowBodies*9/10), "the slow bodies were not held")
			Expect(median(heldLists)).To(BeNumerically(">=", slowLists*9/10), "the slow lists were not held")
		})
	}
})

// median is the middle of samples.
func median(samples []float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// spread is "median M (min m)" of samples.
func spread(samples []float64) string {
	if len(samples) == 0 {
		return "none"
	}
	return fmt.Sprintf("median %.0f (min %.0f)", median(samples), slices.Min(samples))
}

// running counts guid's RUNNING, ORDINARY instances.
func running(board *runningBoard, guid string) int {
	n := 0
	for _, lrp := range instances(board, guid) {
		if lrp.GetState() == models.ActualLRP_RUNNING && lrp.GetPresence() == models.ActualLRP_ORDINARY {
			n++
		}
	}
	return n
}

// desireInParallel desires n LRPs without instances in domain, each
// annotated with annotation bytes.
func desireInParallel(api *client.Client, domain string, n, annotation int) {
	GinkgoHelper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				lrp := lrpSpec(fmt.Sprintf("%s-%04d", domain, i), domain, 0)
				lrp.Annotation = strings.Repeat("a", annotation)
				if _, err := api.DesireLRP(context.Background(), lrp); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	Expect(errs).To(BeEmpty())
}

// trickleBody keeps a connection from ip sending a desire's body a byte a
// second, opening another when the board closes it, until ctx ends.
func trickleBody(ctx context.Context, address, ip string, opened *atomic.Int64) {
	holdConnections(ctx, address, ip, opened, func(conn net.Conn) error {
		_, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: board\r\nContent-Type: %s\r\nContent-Length: 4096\r\n\r\n", models.RouteDesireDesiredLRP, models.ContentTypeJSON)
		return err
	}, func(conn net.Conn) error {
		_, err := conn.Write([]byte{' '})
		return err
	})
}

// readSlowly keeps a connection from ip reading a whole list a kilobyte a
// second, asking again when the board closes it, until ctx ends.
func readSlowly(ctx context.Context, address, ip, body string, opened *atomic.Int64) {
	buf := make([]byte, 1024)
	holdConnections(ctx, address, ip, opened, func(conn net.Conn) error {
		// A small receive buffer, as a reader far away has: the board's
		// writes stand once it and the board's send buffer are full.
		conn.(*net.TCPConn).SetReadBuffer(4096) //nolint:errcheck // best effort
		_, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: board\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", models.RouteDesiredLRPs, models.ContentTypeJSON, len(body), body)
		return err
	}, func(conn net.Conn) error {
		_, err := conn.Read(buf)
		return err
	})
}

// holdConnections keeps one connection from ip to address open until ctx
// ends: it dials (counting each connection in opened), starts a request,
// then takes one step a second until a step fails (the board closed it),
// and dials again.
func holdConnections(ctx context.Context, address, ip string, opened *atomic.Int64, start, step func(net.Conn) error) {
	for ctx.Err() == nil {
		conn, err := dialFrom(ctx, ip, address)
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		opened.Add(1)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		err = start(conn)
		for err == nil && ctx.Err() == nil {
			err = step(conn)
			sleep(ctx, time.Second)
		}
		stop()
		conn.Close()
	}
}

func dialFrom(ctx context.Context, ip, address string) (net.Conn, error) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return dialer.DialContext(ctx, "tcp", address)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// raiseFileLimit makes sure this process may hold n files open: the
// attackers' sockets and the clients'.
func raiseFileLimit(n uint64) {
	GinkgoHelper()
	var limit syscall.Rlimit
	Expect(syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit)).To(Succeed())
	if limit.Cur >= n {
		return
	}
	Expect(limit.Max).To(BeNumerically(">=", n), "RLIMIT_NOFILE's hard limit is below %d", n)
	limit.Cur = n
	Expect(syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit)).To(Succeed())
}

// peakRSS is the board process's peak resident set (VmHWM).
func peakRSS(board *runningBoard) int64 {
	GinkgoHelper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", board.session.Command.Process.Pid))
	Expect(err).NotTo(HaveOccurred())
	match := regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB$`).FindSubmatch(status)
	Expect(match).NotTo(BeNil(), "no VmHWM in %s", status)
	kb, err := strconv.ParseInt(string(match[1]), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return kb << 10
}

// inUse sums corkboard_http_limit_in_use{limit} over the classes.
func (b *runningBoard) inUse(limit string) float64 {
	return b.sumSeries("corkboard_http_limit_in_use", limit)
}

// refusals lists corkboard_http_limit_rejections_total by limit and class.
func (b *runningBoard) refusals() string {
	pattern := regexp.MustCompile(`(?m)^corkboard_http_limit_rejections_total\{(.*)\} (\S+)$`)
	var out []string
	for _, m := range pattern.FindAllStringSubmatch(b.metrics(), -1) {
		out = append(out, m[1]+" "+m[2])
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func (b *runningBoard) sumSeries(name, limit string) float64 {
	GinkgoHelper()
	pattern := regexp.MustCompile(`(?m)^` + name + `\{([^}]*)\} (\S+)$`)
	sum := 0.0
	for _, m := range pattern.FindAllStringSubmatch(b.metrics(), -1) {
		if !strings.Contains(m[1], `limit="`+limit+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		Expect(err).NotTo(HaveOccurred())
		sum += v
	}
	return sum
}

// latencies records calls: how long each took, and the errors.
type latencies struct {
	mu    sync.Mutex
	took  []time.Duration
	errs  []error
	total int
}

func (l *latencies) record(took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total++
	if err != nil {
		l.errs = append(l.errs, err)
		return
	}
	l.took = append(l.took, took)
}

func (l *latencies) time(call func() error) {
	began := time.Now()
	err := call()
	l.record(time.Since(began), err)
}

func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

func (l *latencies) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, err := range l.errs {
		var modelErr *models.Error
		if errors.As(err, &modelErr) {
			out = append(out, modelErr.GetType().String()+": "+modelErr.GetMessage())
			continue
		}
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			out = append(out, "transport: "+urlErr.Error())
			continue
		}
		out = append(out, err.Error())
	}
	return out
}

// summary is "N (F failed), p50 …, p99 …, max …".
func (l *latencies) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	sorted := slices.Clone(l.took)
	slices.Sort(sorted)
	at := func(q float64) time.Duration {
		if len(sorted) == 0 {
			return 0
		}
		return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("%d (%d failed), p50 %s, p99 %s, max %s", l.total, len(l.errs), at(0.5), at(0.99), at(1))
}
