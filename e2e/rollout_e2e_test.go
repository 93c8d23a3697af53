package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// Rolling updates with real processes: 6 instances of hello on two reps
// in two zones, each cell with 6 instance slots, a router-like client
// (router_test.go) sending requests to every instance it believes routable
// all along. The specs run in order on one cluster, each starting from
// where the one before left the LRP: v1 → v2 (defaults) → v3 (surge 50%)
// → back to v1 → a definition that never gets healthy (fails, then
// aborted) → another one with auto_revert → a drain of cell-z1 and its
// return. After each, the zones hold 3 and 3 (at most one apart) and no
// cell holds more than its capacity.
var _ = Describe("rolling updates of 6 hello instances, with a router sending requests throughout", Ordered, func() {
	const (
		guid      = "hello"
		instances = 6
		// deadline is the progress_deadline of the failing rollouts:
		// short, so the specs wait seconds rather than the default 10 min.
		deadline = 5 * time.Second
		// rolloutLimit bounds how long a rollout of 6 instances may take.
		// It is a deadline against hanging, not a speed requirement.
		rolloutLimit = 2 * time.Minute
	)
	var (
		b    *board
		z1   *runningRep
		both = []string{"cell-z1", "cell-z2"}
		// The definition ids, as the board named them.
		v1ID, v2ID, v3ID string
	)
	ctx := context.Background()
	// Six slots a cell: all 6 instances fit on one cell (a drain), and a
	// surge of 3 fits too, but only if placement counts every instance.
	slots := map[string]any{"capacity": map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": instances}}

	BeforeAll(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		z1 = startRep(b, "cell-z1", "z1", slots)
		startRep(b, "cell-z2", "z2", slots)

		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		lrp.UpdateStrategy = nil // every default: surge 1, unavailable 0
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows := steady(b, guid, instances, both...)
		v1ID = rows[0].GetDefinitionId()
		expectVersion(rows, v1ID, "v1")
	})

	// roll runs change with a router and a rollout_changed recorder going,
	// waits until the rollout's status passes done and the LRP is back to
	// 6 ORDINARY instances answering, and checks that the router saw no
	// failed request and never fewer than 6 routable indices.
	roll := func(change func(), done rolloutCondition) (*models.RolloutStatus, rolloutEvents, []*models.ActualLRP) {
		GinkgoHelper()
		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances), "the router sees every instance before the change")
		events := recordRollouts(b, guid)

		start := time.Now()
		change()
		status := waitForRollout(b, guid, rolloutLimit, done)
		rows := steady(b, guid, instances, both...)
		took := time.Since(start)

		rows = expectSpreadAndFit(b, guid, instances)
		// A change can be over in a pass (going back keeps the old
		// instances): the router goes on until it has asked enough of
		// what runs now to mean something.
		Eventually(r.sent).Should(BeNumerically(">", 100))
		stats := r.stop()
		AddReportEntry(fmt.Sprintf("%s: to %s", CurrentSpecReport().LeafNodeText, done.what), took.Round(time.Millisecond).String())
		AddReportEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d, answers by version %v, %d relists",
			stats.Requests, len(stats.Failures), stats.Fewest, stats.Versions, stats.Relists))
		expectServedThroughout(stats, instances)
		return status, events.stop(), rows
	}

	It("rolls every instance to v2 with the default strategy, one at a time", func() {
		v2 := filepath.Join("..", "fixtures", "lrps", "hello-local-v2-definition.json")
		status, events, rows := roll(func() {
			b.cork("update", guid, "--definition", v2)
		}, complete())

		v2ID = status.GetActiveDefinitionId()
		Expect(v2ID).NotTo(BeEmpty())
		Expect(v2ID).NotTo(Equal(v1ID))
		Expect(status.GetHealthyDefinitionId()).To(Equal(v2ID))
		Expect(status.GetUpdatedInstances()).To(BeEquivalentTo(instances))
		Expect(status.GetInFlight()).To(BeZero())
		expectVersion(rows, v2ID, "v2")
		Expect(events.maxInFlight()).To(BeEquivalentTo(1), "surge 1: one replacement at a time")
		Expect(events.states()).To(ContainElements(models.RolloutStatus_PROGRESSING, models.RolloutStatus_COMPLETE))
	})

	It("rolls every instance to v3 with max_surge 50%, three at a time", func() {
		status, events, rows := roll(func() {
			_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
				Definition:     definitionFixture("hello-local-v3-definition.json"),
				UpdateStrategy: &models.UpdateStrategy{MaxSurge: "50%", MaxUnavailable: "0"},
			})
			Expect(err).NotTo(HaveOccurred())
		}, complete())

		v3ID = status.GetActiveDefinitionId()
		Expect(v3ID).NotTo(BeElementOf(v1ID, v2ID, ""))
		Expect(status.GetHealthyDefinitionId()).To(Equal(v3ID))
		expectVersion(rows, v3ID, "v3")
		Expect(events.maxInFlight()).To(And(BeNumerically(">=", 2), BeNumerically("<=", 3)),
			"surge 50%% of 6 is 3: more than one replacement at once, never more than 3")
	})

	It("rolls back to v1 the same way, with cork rollback --to", func() {
		status, _, rows := roll(func() {
			b.cork("rollback", guid, "--to", v1ID)
		}, complete())

		Expect(status.GetActiveDefinitionId()).To(Equal(v1ID))
		Expect(status.GetHealthyDefinitionId()).To(Equal(v1ID))
		expectVersion(rows, v1ID, "v1")
		Expect(strings.ToLower(b.cork("rollout", "status", guid))).To(ContainSubstring("complete"))
	})

	It("fails a rollout to a definition that never gets healthy at its progress deadline, v1 serving throughout", func() {
		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances))
		started := time.Now()
		lrp, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition:     definitionFixture("hello-unhealthy-definition.json"),
			UpdateStrategy: &models.UpdateStrategy{ProgressDeadlineMs: deadline.Milliseconds()},
		})
		Expect(err).NotTo(HaveOccurred())
		unhealthyID := lrp.GetActiveDefinitionId()
		Expect(unhealthyID).NotTo(BeElementOf(v1ID, v2ID, v3ID, ""))

		status := waitForRollout(b, guid, rolloutLimit, rolloutCondition{"FAILED", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_FAILED && s.GetActiveDefinitionId() == unhealthyID
		}})
		AddReportEntry("update to FAILED", time.Since(started).Round(time.Millisecond).String())
		AddReportEntry("reason", status.GetReason())
		Expect(time.Duration(status.GetFinishedAt()-status.GetProgressAt())).To(BeNumerically(">=", deadline),
			"failed no earlier than the deadline after the last progress")
		Expect(status.GetReason()).NotTo(BeEmpty())
		Expect(status.GetHealthyDefinitionId()).To(Equal(v1ID))

		By("still serving every index on v1 a while after the failure, with nothing new started")
		time.Sleep(2 * time.Second)
		Expect(servingIndices(b, guid, v1ID)).To(HaveLen(instances))
		Expect(b.client().RolloutStatus(ctx, guid)).To(HaveField("State", models.RolloutStatus_FAILED))

		stats := r.stop()
		AddReportEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d, answers by version %v",
			stats.Requests, len(stats.Failures), stats.Fewest, stats.Versions))
		expectServedThroughout(stats, instances)
		Expect(stats.Versions).NotTo(HaveKey("v4-unhealthy"), "no request reached an instance that never got healthy")
	})

	It("aborts the failed rollout back to the healthy v1, start before stop", func() {
		status, _, rows := roll(func() {
			status, err := b.client().AbortRollout(ctx, guid, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.GetActiveDefinitionId()).To(Equal(v1ID))
		}, complete())

		Expect(status.GetActiveDefinitionId()).To(Equal(v1ID))
		expectVersion(rows, v1ID, "v1")
	})

	It("reverts a failing rollout to the healthy v1 on its own with auto_revert, restarting no v1 instance", func() {
		before := instanceGuids(b.lrps(guid))
		broken := definitionFixture("hello-unhealthy-definition.json")
		// Other content than the last spec's, so a new definition.
		broken.Action.Env = append(broken.Action.Env, &models.EnvironmentVariable{Name: "ATTEMPT", Value: "2"})
		var brokenID string
		status, events, rows := roll(func() {
			lrp, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
				Definition:     broken,
				UpdateStrategy: &models.UpdateStrategy{ProgressDeadlineMs: deadline.Milliseconds(), AutoRevert: true},
			})
			Expect(err).NotTo(HaveOccurred())
			brokenID = lrp.GetActiveDefinitionId()
		}, rolloutCondition{"REVERTED and finished", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_REVERTED && s.GetFinishedAt() != 0
		}})

		Expect(brokenID).NotTo(BeElementOf(v1ID, v2ID, v3ID, ""))
		Expect(status.GetActiveDefinitionId()).To(Equal(v1ID))
		Expect(status.GetHealthyDefinitionId()).To(Equal(v1ID))
		Expect(status.GetFailedDefinitionId()).To(Equal(brokenID))
		AddReportEntry("reason", status.GetReason())
		expectVersion(rows, v1ID, "v1")
		Expect(events.states()).To(ContainElement(models.RolloutStatus_REVERTED))

		// The v1 instance the broken one was replacing was kept serving
		// (RETIRING) and came back as its index's instance: the revert
		// started no v1 instance.
		after := instanceGuids(rows)
		restarted := 0
		for _, g := range after {
			if !slices.Contains(before, g) {
				restarted++
			}
		}
		AddReportEntry("v1 instances restarted by the revert", fmt.Sprintf("%d of %d", restarted, instances))
		Expect(restarted).To(BeZero(), "v1 instances before %v, after %v", before, after)
	})

	It("cancels a rollout under way with cork operation cancel: back to the healthy v1, start before stop", func() {
		var updateOp string
		status, _, rows := roll(func() {
			_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
				Definition: definitionFixture("hello-local-v2-definition.json"),
				// Slow enough to cancel half way.
				UpdateStrategy: &models.UpdateStrategy{MinReadyMs: 1500},
			})
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() (*models.RolloutStatus, error) { return b.client().RolloutStatus(ctx, guid) }).
				WithTimeout(rolloutLimit).Should(And(
				HaveField("State", models.RolloutStatus_PROGRESSING),
				HaveField("UpdatedInstances", BeNumerically(">=", 1)),
			))
			progressing, err := b.client().RolloutStatus(ctx, guid)
			Expect(err).NotTo(HaveOccurred())
			updateOp = progressing.GetOperationId()
			Expect(updateOp).NotTo(BeEmpty())
			b.cork("operation", "cancel", updateOp)
		}, rolloutCondition{"COMPLETE on v1", func(s *models.RolloutStatus) bool {
			return complete().ok(s) && s.GetActiveDefinitionId() == v1ID
		}})

		Expect(status.GetActiveDefinitionId()).To(Equal(v1ID))
		expectVersion(rows, v1ID, "v1")
		canceled := &models.Operation{}
		Expect(protojson.Unmarshal([]byte(b.cork("operation", updateOp)), canceled)).To(Succeed())
		Expect(canceled.GetStatus()).To(Equal(models.Operation_CANCELED))
		Expect(canceled.GetKind()).To(Equal(models.Operation_UPDATE_DEFINITION))
		abort := &models.Operation{}
		Expect(protojson.Unmarshal([]byte(b.cork("operation", status.GetOperationId())), abort)).To(Succeed())
		Expect(abort.GetKind()).To(Equal(models.Operation_ABORT))
		Expect(abort.GetStatus()).To(Equal(models.Operation_FINISHED))
		table := b.cork("operations", guid, "-o", "table")
		AddReportEntry("cork operations hello -o table", table)
		Expect(table).To(ContainSubstring("CANCELED"))
	})

	It("moves every instance off a drained cell, and spreads them over both zones again once the cell returns", func() {
		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances))

		start := time.Now()
		b.cork("cell", "drain", "cell-z1")
		Eventually(z1.session).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		steady(b, guid, instances, "cell-z2")
		drained := time.Since(start)

		start = time.Now()
		z1 = z1.restart() // its first registration clears the drain
		Eventually(func() map[string]int {
			return zonesOf(steady(b, guid, instances, both...))
		}).WithTimeout(rolloutLimit).Should(Equal(map[string]int{"cell-z1": 3, "cell-z2": 3}))
		AddReportEntry("drain to 6 on cell-z2", drained.Round(time.Millisecond).String())
		AddReportEntry("return to 3 and 3", time.Since(start).Round(time.Millisecond).String())
		expectSpreadAndFit(b, guid, instances)

		stats := r.stop()
		AddReportEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d",
			stats.Requests, len(stats.Failures), stats.Fewest))
		expectServedThroughout(stats, instances)
	})
})

// expectSpreadAndFit waits until guid's n instances are steady and split
// over the two cells (one per zone) at most one apart, and checks that no
// cell holds more than its capacity. It returns the rows.
func expectSpreadAndFit(b *board, guid string, n int) []*models.ActualLRP {
	GinkgoHelper()
	var rows []*models.ActualLRP
	Eventually(func() error {
		rows = b.lrps(guid)
		if err := checkSteady(rows, n, []string{"cell-z1", "cell-z2"}); err != nil {
			return err
		}
		zones := zonesOf(rows)
		if d := zones["cell-z1"] - zones["cell-z2"]; d > 1 || d < -1 {
			return fmt.Errorf("zones more than one apart: %v", zones)
		}
		return nil
	}).WithTimeout(time.Minute).Should(Succeed())
	cells, err := b.client().Cells(context.Background())
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cells {
		Expect(c.GetFree().GetInstances()).To(BeNumerically(">=", 0), "%s holds more instances than it has slots", c.GetCellId())
		Expect(c.GetFree().GetMemoryMb()).To(BeNumerically(">=", 0), "%s holds more memory than it has", c.GetCellId())
	}
	return rows
}

// zonesOf counts rows by cell: each cell is its zone here.
func zonesOf(rows []*models.ActualLRP) map[string]int {
	counts := map[string]int{}
	for _, row := range rows {
		counts[row.GetCellId()]++
	}
	return counts
}

func instanceGuids(rows []*models.ActualLRP) []string {
	var guids []string
	for _, row := range rows {
		guids = append(guids, row.GetInstanceGuid())
	}
	slices.Sort(guids)
	return guids
}

// rolloutCondition is a condition on a rollout status, for
// waitForRollout.
type rolloutCondition struct {
	what string
	ok   func(*models.RolloutStatus) bool
}

// complete: the rollout completed, its active definition healthy.
func complete() rolloutCondition {
	return rolloutCondition{"COMPLETE", func(s *models.RolloutStatus) bool {
		return s.GetState() == models.RolloutStatus_COMPLETE && s.GetActiveDefinitionId() == s.GetHealthyDefinitionId() &&
			s.GetFinishedAt() != 0
	}}
}

// waitForRollout polls guid's rollout status until it passes done.
func waitForRollout(b *board, guid string, limit time.Duration, done rolloutCondition) *models.RolloutStatus {
	GinkgoHelper()
	var status *models.RolloutStatus
	Eventually(func() error {
		var err error
		status, err = b.client().RolloutStatus(context.Background(), guid)
		if err != nil {
			return err
		}
		if !done.ok(status) {
			return fmt.Errorf("want the rollout %s, have %s", done.what, protojson.Format(status))
		}
		return nil
	}).WithTimeout(limit).Should(Succeed())
	return status
}

// expectServedThroughout: no request the router sent failed, and every
// look it took found every index routable.
func expectServedThroughout(stats routerStats, instances int) {
	GinkgoHelper()
	Expect(stats.Requests).To(BeNumerically(">", 50), "the router sent enough requests to mean something")
	Expect(stats.Failures).To(BeEmpty(), "requests that failed")
	Expect(stats.Fewest).To(Equal(instances), "fewest routable indices the router saw at one look, at %s", stats.Worst)
}

// expectVersion: every row runs definitionID and its instance answers
// with version.
func expectVersion(rows []*models.ActualLRP, definitionID, version string) {
	GinkgoHelper()
	for _, row := range rows {
		Expect(row.GetDefinitionId()).To(Equal(definitionID), "index %d", row.GetIndex())
		Expect(versionOf(row)).To(Equal(version), "index %d", row.GetIndex())
	}
}

// versionOf asks the instance of a row which VERSION it runs.
func versionOf(row *models.ActualLRP) string {
	GinkgoHelper()
	info := row.GetNetInfo()
	resp, err := httpClient.Get(fmt.Sprintf("http://%s:%d/", info.GetAddress(), info.GetPorts()[0].GetHostPort()))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var answer struct {
		Version string `json:"version"`
	}
	Expect(json.NewDecoder(resp.Body).Decode(&answer)).To(Succeed())
	return answer.Version
}

// servingIndices lists the indices of guid with a RUNNING, routable
// instance on definitionID (any presence) that answers as itself.
func servingIndices(b *board, guid, definitionID string) []int32 {
	GinkgoHelper()
	var serving []int32
	seen := map[int32]bool{}
	for _, row := range b.lrps(guid) {
		if seen[row.GetIndex()] || row.GetState() != models.ActualLRP_RUNNING || !row.GetRoutable() ||
			row.GetDefinitionId() != definitionID || !answers(row) {
			continue
		}
		seen[row.GetIndex()] = true
		serving = append(serving, row.GetIndex())
	}
	return serving
}

// readFixture decodes fixtures/lrps/name into msg, as cork reads specs.
func readFixture(name string, msg proto.Message) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join("..", "fixtures", "lrps", name))
	Expect(err).NotTo(HaveOccurred())
	Expect(protojson.Unmarshal(raw, msg)).To(Succeed())
}

func definitionFixture(name string) *models.LRPDefinition {
	GinkgoHelper()
	def := &models.LRPDefinition{}
	readFixture(name, def)
	return def
}

// rolloutEvents records one LRP's rollout_changed statuses.
type rolloutEvents struct {
	statuses []*models.RolloutStatus
}

func (e rolloutEvents) maxInFlight() int32 {
	var most int32
	for _, s := range e.statuses {
		most = max(most, s.GetInFlight())
	}
	return most
}

func (e rolloutEvents) states() []models.RolloutStatus_State {
	var out []models.RolloutStatus_State
	for _, s := range e.statuses {
		out = append(out, s.GetState())
	}
	return out
}

type rolloutRecorder struct {
	mu       sync.Mutex
	statuses []*models.RolloutStatus
	cancel   context.CancelFunc
	done     chan struct{}
}

// recordRollouts records guid's rollout_changed events from now until
// stop.
func recordRollouts(b *board, guid string) *rolloutRecorder {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := b.client().Events(ctx, client.EventsOptions{Types: []string{models.EventRolloutChanged}})
	Expect(err).NotTo(HaveOccurred())
	rec := &rolloutRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		defer stream.Close()
		for {
			event, err := stream.Next()
			if err != nil {
				return
			}
			if p, ok := event.Payload.(*models.RolloutChangedEvent); ok && p.GetStatus().GetProcessGuid() == guid {
				rec.mu.Lock()
				rec.statuses = append(rec.statuses, p.GetStatus())
				rec.mu.Unlock()
			}
		}
	}()
	DeferCleanup(rec.stop)
	return rec
}

func (r *rolloutRecorder) stop() rolloutEvents {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return rolloutEvents{statuses: append([]*models.RolloutStatus(nil), r.statuses...)}
}
