package e2e_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// The per-cell limits of docs/fleet.md with a real rep (issue 31):
// max_starts_per_cell_per_second, which the board's placement keeps, and
// max_asset_downloads_per_cell, which the board hands the rep and the rep's
// asset cache keeps. Each spec runs one cell, so that everything started
// or downloaded is that cell's.
var _ = Describe("per-cell limits with a real rep", func() {
	ctx := context.Background()

	It("places 10 instances desired at once on one cell at most 2 within any second under max_starts_per_cell_per_second 2, and starts them all", func() {
		const (
			guid      = "hello"
			limit     = 2
			instances = 10
		)
		b := startBoard(map[string]any{"max_starts_per_cell_per_second": limit})
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		// Each row's changes as the board published them, with the
		// board's own times: when it was placed on the cell, claimed,
		// RUNNING.
		changes := recordEvents(b, models.EventActualLRPCreated, models.EventActualLRPChanged)

		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.ProcessGuid = guid
		lrp.Instances = instances
		desired := time.Now()
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, instances, "cell-z1")
		took := time.Since(desired)
		// steady read every row RUNNING; the stream may deliver the last
		// of those changes a moment later: wait for them before stopping it.
		Eventually(func() int {
			ran := map[int32]bool{}
			for _, event := range changes.soFar() {
				if p, ok := event.Payload.(*models.ActualLRPChangedEvent); ok && p.GetAfter().GetProcessGuid() == guid &&
					p.GetAfter().GetState() == models.ActualLRP_RUNNING {
					ran[p.GetAfter().GetIndex()] = true
				}
			}
			return len(ran)
		}).WithTimeout(10*time.Second).Should(Equal(instances), "the stream delivered every index's RUNNING")
		events, lost := changes.stop()
		Expect(lost).To(BeZero(), "the event stream lost none of the rows' changes")

		placed, claimed, running := map[string]int64{}, map[string]int64{}, map[string]int64{}
		var waited, crashed []string
		for _, event := range events {
			var row *models.ActualLRP
			switch p := event.Payload.(type) {
			case *models.ActualLRPCreatedEvent:
				row = p.GetActualLrp()
			case *models.ActualLRPChangedEvent:
				row = p.GetAfter()
			}
			if row.GetProcessGuid() != guid || row.GetPresence() != models.ActualLRP_ORDINARY {
				continue
			}
			if row.GetCrashCount() > 0 {
				crashed = append(crashed, fmt.Sprintf("%d: %s", row.GetIndex(), row.GetCrashReason()))
			}
			if strings.HasPrefix(row.GetPlacementError(), "waiting to start:") {
				waited = append(waited, fmt.Sprintf("%d: %s", row.GetIndex(), row.GetPlacementError()))
			}
			if row.GetCellId() == "" {
				continue
			}
			// An index is placed once (nothing crashes here): the first
			// version of its row on the cell, before the claim gives it an
			// instance guid. Placement sets since; claiming and running
			// move it.
			key := fmt.Sprint(row.GetIndex())
			first := func(at map[string]int64) {
				if _, seen := at[key]; !seen {
					at[key] = row.GetSince()
				}
			}
			first(placed)
			switch row.GetState() {
			case models.ActualLRP_CLAIMED:
				first(claimed)
			case models.ActualLRP_RUNNING:
				first(claimed) // a claim and a start reported at once
				first(running)
			}
		}
		mostPlaced, placedWindow := mostWithinWindow(placed, convergence.StartWindow)
		mostClaimed, claimedWindow := mostWithinWindow(claimed, convergence.StartWindow)
		AddReportEntry("desire to 10 RUNNING on one cell, max_starts_per_cell_per_second 2", took.Round(time.Millisecond).String())
		AddReportEntry("placements and claims in one second", fmt.Sprintf(
			"at most %d placed (%s), at most %d claimed (%s); %d row versions said waiting to start",
			mostPlaced, placedWindow, mostClaimed, claimedWindow, len(waited)))
		AddReportEntry("placed, claimed, RUNNING (s after the first placement), by index", startTimeline(placed, claimed, running))

		Expect(crashed).To(BeEmpty(), "no instance crashed: each index was placed once")
		Expect(placed).To(HaveLen(instances), "every index was placed on the cell")
		Expect(running).To(HaveLen(instances), "every instance ran")
		Expect(mostPlaced).To(BeNumerically("<=", limit), "instances placed on cell-z1 within one second: %s", placedWindow)
		// Claims are reported, not asserted: the limit is the board's on
		// its placements, and a board whose view of a claim comes late
		// may place the next instance a second after the earlier
		// placement rather than after that claim.
		Expect(waited).NotTo(BeEmpty(), "instances waited, unplaced, with a placement error naming the limit")
		Expect(waited[0]).To(ContainSubstring("max_starts_per_cell_per_second (2)"))
	})

	It("downloads 7 different assets for 6 LRPs on one cell at most 2 at once under max_asset_downloads_per_cell 2, each once, and starts every instance", func() {
		const (
			limit = 2
			lrps  = 6
			// hold is how long the asset server takes over each answer, so
			// that downloads the gate let in together overlap.
			hold = 2 * time.Second
		)
		dir := GinkgoT().TempDir()
		sums := map[string]string{}
		for i := range lrps {
			name := fmt.Sprintf("asset-%d.txt", i)
			body := []byte(fmt.Sprintf("asset %d of the download limit spec\n", i))
			Expect(os.WriteFile(filepath.Join(dir, name), body, 0o644)).To(Succeed())
			sum := sha256.Sum256(body)
			sums[name] = hex.EncodeToString(sum[:])
		}
		// With assets, an instance's directory holds only what they put
		// there: the hello app comes as one more asset, the same for
		// every LRP, so the cell downloads it once and the other starts
		// wait for that download without a slot of their own.
		app, err := os.ReadFile(filepath.Join(appsDir, "hello"))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "hello"), app, 0o644)).To(Succeed())
		appSum := sha256.Sum256(app)
		assets := newSlowAssetServer(dir, hold)
		web := httptest.NewServer(assets)
		DeferCleanup(web.Close)

		b := startBoard(map[string]any{"max_asset_downloads_per_cell": limit})
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")

		guids := make([]string, lrps)
		for i := range guids {
			name := fmt.Sprintf("asset-%d.txt", i)
			guids[i] = fmt.Sprintf("assets-%d", i)
			lrp := &models.DesiredLRP{}
			readFixture("hello-local.json", lrp)
			lrp.ProcessGuid = guids[i]
			lrp.Instances = 1
			lrp.Definition.Assets = []*models.Asset{
				{Url: web.URL + "/" + name, Sha256: sums[name], Destination: "asset.txt"},
				{Url: web.URL + "/hello", Sha256: hex.EncodeToString(appSum[:]), Destination: "hello"},
			}
			_, err := b.client().DesireLRP(ctx, lrp)
			Expect(err).NotTo(HaveOccurred())
		}
		for _, guid := range guids {
			steady(b, guid, 1, "cell-z1")
		}

		var waitedLines []string
		for _, guid := range guids {
			for _, line := range strings.Split(b.cork("logs", guid+"/0", "-n", "50"), "\n") {
				if strings.Contains(line, "waiting to download:") {
					waitedLines = append(waitedLines, guid+": "+strings.TrimSpace(line))
				}
			}
		}
		most, counts := assets.figures()
		AddReportEntry("asset downloads on cell-z1, max_asset_downloads_per_cell 2", fmt.Sprintf(
			"at most %d at once; requests %v; %d starts waited", most, counts, len(waitedLines)))
		AddReportEntry("waiting lines", strings.Join(waitedLines, "\n"))

		Expect(most).To(BeNumerically("<=", limit), "downloads from cell-z1 under way at once")
		Expect(most).To(Equal(limit), "the rep used its 2 slots: it holds downloads to the limit, not to one")
		for name := range sums {
			Expect(counts).To(HaveKeyWithValue("/"+name, 1), "each asset downloaded once")
		}
		Expect(counts).To(HaveKeyWithValue("/hello", 1), "the app, every LRP's asset, downloaded once")
		Expect(waitedLines).NotTo(BeEmpty(), "a start that waited for a slot says so in its instance's log")
		Expect(waitedLines[0]).To(ContainSubstring("(max_asset_downloads_per_cell 2)"))
	})
})

// mostWithinWindow is the most of the times (Unix nanoseconds, by key)
// within any window [t, t+window), and which keys those are, with their
// times relative to the window's start.
func mostWithinWindow(times map[string]int64, window time.Duration) (int, string) {
	sorted := make([]int64, 0, len(times))
	for _, at := range times {
		sorted = append(sorted, at)
	}
	slices.Sort(sorted)
	most, from := 0, 0
	for i := range sorted {
		n := 0
		for j := i; j < len(sorted) && sorted[j]-sorted[i] < int64(window); j++ {
			n++
		}
		if n > most {
			most, from = n, i
		}
	}
	if most == 0 {
		return 0, "none"
	}
	var offsets []string
	for _, at := range sorted[from : from+most] {
		offsets = append(offsets, "+"+time.Duration(at-sorted[from]).Round(time.Millisecond).String())
	}
	return most, "from " + time.Unix(0, sorted[from]).Format(time.StampMilli) + ": " + strings.Join(offsets, " ")
}

// startTimeline lists each index's placement, claim and RUNNING times in
// seconds after the first placement, in placement order.
func startTimeline(placed, claimed, running map[string]int64) string {
	keys := slices.Collect(maps.Keys(placed))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(placed[a], placed[b]) })
	if len(keys) == 0 {
		return "none"
	}
	origin := placed[keys[0]]
	secs := func(at int64) string {
		if at == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", float64(at-origin)/float64(time.Second))
	}
	var lines []string
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s: %s %s %s", k, secs(placed[k]), secs(claimed[k]), secs(running[k])))
	}
	return strings.Join(lines, "\n")
}

// slowAssetServer serves a directory, taking hold over each answer, and
// counts the requests by path and the most it answered at once.
type slowAssetServer struct {
	files http.Handler
	hold  time.Duration

	mu     sync.Mutex
	now    int
	most   int
	counts map[string]int
}

func newSlowAssetServer(dir string, hold time.Duration) *slowAssetServer {
	return &slowAssetServer{files: http.FileServer(http.Dir(dir)), hold: hold, counts: map[string]int{}}
}

func (s *slowAssetServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.counts[r.URL.Path]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	select {
	case <-time.After(s.hold):
	case <-r.Context().Done():
		return
	}
	s.files.ServeHTTP(w, r)
}

// figures are the most requests answered at once and the requests by
// path.
func (s *slowAssetServer) figures() (int, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most, maps.Clone(s.counts)
}
