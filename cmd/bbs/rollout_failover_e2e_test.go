package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// A rolling update survives the death of the board running it: two
// boards share one database, the first converges and starts the rollout,
// it is SIGKILLed mid-way, and the second takes the lease and finishes
// it. Simulated cells (internal/simcell) talk to the second board only.
// SQLite is left out, as in failover_e2e_test.go: its file is not shared
// between machines.
var _ = Describe("A rolling update across a board failover", func() {
	ctx := context.Background()
	const (
		heldSeries = "corkboard_convergence_lease_held"
		guid       = "rolling"
		count      = 12
		// rollTo rolls surge 2, unavailable 0; min_ready makes each index
		// take at least half a second, so that the rollout is still under
		// way when the first board dies.
		minReadyMs = 500
	)

	for _, dialect := range testdb.MustDialects() {
		if dialect == testdb.SQLite {
			continue
		}
		It("is completed by the other board after the lease owner is SIGKILLed mid-rollout, no index lost or doubled, on "+dialect, func() {
			database := newDatabase(dialect)
			// The spec is about the lease, not the cells: a presence TTL
			// longer than the e2e settings' 1 s keeps a heartbeat that a
			// loaded machine delays from marking instances SUSPECT, which
			// the watch would count as an index without a routable
			// instance (seen once in CI, with no failover yet).
			settings := func(id string) map[string]any {
				return map[string]any{"board_id": id, "cell_presence_ttl": "5s"}
			}
			first := startConvergingBoard(database, settings("board-first"))
			Eventually(func() float64 { return first.metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
			second := startConvergingBoard(database, settings("board-second"))

			api := second.client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			cells := []*simcell.Cell{
				startCell(second, "cell-a", "z1"),
				startCell(second, "cell-b", "z2"),
				startCell(second, "cell-c", "z3"),
			}
			_, err := api.DesireLRP(ctx, lrpSpec(guid, "apps", count))
			Expect(err).NotTo(HaveOccurred())
			Eventually(runningOn(second, guid, "v1")).WithTimeout(convergeLimit).Should(Equal(count))
			Expect(second.metric(heldSeries)).To(Equal(0.0), "only the first board converges")

			watch := watchRollout(second, guid, count, cells)
			v2ID := rollTo(api, guid, count, 2, minReadyMs)
			Expect(v2ID).NotTo(BeElementOf("", "v1"))

			By("letting the first board replace a few indices")
			Eventually(func() (*models.RolloutStatus, error) { return api.RolloutStatus(ctx, guid) }).WithTimeout(convergeLimit).Should(And(
				HaveField("State", models.RolloutStatus_PROGRESSING),
				HaveField("UpdatedInstances", BeNumerically(">=", 4)),
			))

			By("killing the first board mid-rollout")
			first.session.Kill()
			Eventually(first.session).WithTimeout(startupLimit).Should(gexec.Exit())
			killed := time.Now()
			atKill, err := api.RolloutStatus(ctx, guid)
			Expect(err).NotTo(HaveOccurred())
			Expect(atKill.GetState()).To(Equal(models.RolloutStatus_PROGRESSING), "the rollout was under way when the board died")
			Expect(atKill.GetUpdatedInstances()).To(BeNumerically("<", count))
			AddReportEntry("at the kill", fmt.Sprintf("%d of %d updated, %d in flight", atKill.GetUpdatedInstances(), count, atKill.GetInFlight()))

			By("the second board takes the lease and completes the rollout")
			Eventually(func() float64 { return second.metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
			var done *models.RolloutStatus
			Eventually(func() (*models.RolloutStatus, error) {
				done, err = api.RolloutStatus(ctx, guid)
				return done, err
			}).WithTimeout(2 * convergeLimit).Should(And(
				HaveField("State", models.RolloutStatus_COMPLETE),
				HaveField("ActiveDefinitionId", v2ID),
				HaveField("HealthyDefinitionId", v2ID),
				HaveField("UpdatedInstances", BeEquivalentTo(count)),
			))
			AddReportEntry("kill to COMPLETE ("+dialect+", lease TTL "+e2eLeaseTTL+")", time.Since(killed).Round(time.Millisecond).String())

			By("the update's operation, leased to the first board, is adopted by the second and FINISHED")
			Expect(done.GetOperationId()).NotTo(BeEmpty())
			var op *models.Operation
			Eventually(func() (models.Operation_Status, error) {
				op, err = api.Operation(ctx, done.GetOperationId())
				return op.GetStatus(), err
			}).WithTimeout(convergeLimit).Should(Equal(models.Operation_FINISHED))
			Expect(op.GetKind()).To(Equal(models.Operation_UPDATE_DEFINITION))
			var history []string
			for _, e := range op.GetHistory() {
				history = append(history, e.GetMessage())
			}
			AddReportEntry("operation history", strings.Join(history, "\n"))
			Expect(history).To(ContainElement(HavePrefix("adopted by board board-second: board board-first's lease expired at ")))
			Expect(op.GetLeaseOwner()).To(Equal("board-second"))

			By("every index ends on the new definition, one instance each")
			Eventually(views(second, guid)).WithTimeout(convergeLimit).Should(HaveLen(count), "the RETIRING rows are gone")
			for i, lrp := range instances(second, guid) {
				Expect(lrp.GetIndex()).To(BeEquivalentTo(i))
				Expect(lrp.GetPresence()).To(Equal(models.ActualLRP_ORDINARY))
				Expect(lrp.GetState()).To(Equal(models.ActualLRP_RUNNING))
				Expect(lrp.GetDefinitionId()).To(Equal(v2ID), "index %d", i)
			}
			Eventually(func() []string { return cellInstances(cells) }).WithTimeout(convergeLimit).Should(Equal(expectedOn(v2ID, count)),
				"the cells run exactly one instance per index, on the new definition, and keep nothing retiring")

			report := watch.stop()
			AddReportEntry("observations", report.String())
			Expect(report.observations).To(BeNumerically(">", 20), "the watcher looked often enough to mean something")
			Expect(report.violations).To(BeEmpty())
		})
	}
})

// rollTo updates guid (count instances of lrpSpec) to version, a new
// definition started with --version N, rolling surge 2 at a time, none
// unavailable, each new index ready after minReadyMs; it returns the
// definition's id.
func rollTo(api *client.Client, guid string, count int, version int, minReadyMs int64) string {
	GinkgoHelper()
	definition := lrpSpec(guid, "apps", int32(count)).GetDefinition()
	definition.DefinitionId = ""
	definition.Action.Args = []string{"--version", fmt.Sprint(version)}
	updated, err := api.UpdateDesiredLRP(context.Background(), guid, &models.DesiredLRPUpdate{
		Definition:       definition,
		UpdateIdentifier: fmt.Sprintf("v%d", version),
		UpdateStrategy:   &models.UpdateStrategy{MaxSurge: "2", MaxUnavailable: "0", MinReadyMs: minReadyMs},
	})
	Expect(err).NotTo(HaveOccurred(), "update %s to v%d", guid, version)
	return updated.GetActiveDefinitionId()
}

// runningOn counts guid's ORDINARY RUNNING rows on definitionID.
func runningOn(board *runningBoard, guid, definitionID string) func() int {
	return func() int {
		n := 0
		for _, lrp := range instances(board, guid) {
			if lrp.GetPresence() == models.ActualLRP_ORDINARY && lrp.GetState() == models.ActualLRP_RUNNING && lrp.GetDefinitionId() == definitionID {
				n++
			}
		}
		return n
	}
}

// cellInstances lists what the cells run, ORDINARY and RETIRING, as
// "index definition presence", sorted.
func cellInstances(cells []*simcell.Cell) []string {
	var out []string
	for _, c := range cells {
		for _, instance := range c.Running() {
			out = append(out, fmt.Sprintf("%d %s ORDINARY", instance.Index, instance.DefinitionID))
		}
		for _, instance := range c.Retiring() {
			out = append(out, fmt.Sprintf("%d %s RETIRING", instance.Index, instance.DefinitionID))
		}
	}
	sort.Strings(out)
	return out
}

func expectedOn(definitionID string, instances int) []string {
	var out []string
	for i := range instances {
		out = append(out, fmt.Sprintf("%d %s ORDINARY", i, definitionID))
	}
	sort.Strings(out)
	return out
}

// rolloutWatch looks at an LRP's rows (through a board's API) and at what
// the cells run every 50 ms, and records every look that breaks the
// rollout's promises with unavailable 0:
//
//   - an index without a RUNNING, routable instance (ORDINARY or
//     RETIRING): an instance lost;
//   - an index with more than one ORDINARY row, or more than two rows
//     (ORDINARY and RETIRING): an instance doubled;
//   - an instance a cell has run for longer than orphanGrace with no row
//     of the board naming it: an orphan process, a double no router
//     sees and nothing stops.
//
// An orphan for a moment is no violation: a cell whose board dies
// between its claim and its start keeps the instance running, as a rep
// keeps a process running whatever the board heard of it, and a new
// definition meanwhile replaces the row that was not yet RUNNING. The
// cell learns that at its first report a board answers — after the
// killed board is back — and stops it. A chaos run saw exactly that for
// 70 ms, a third instance of an index on the cells whose row had gone.
//
// An index whose ORDINARY row is missing for a moment while its RETIRING
// instance serves is not a loss: the store writes a pass's retirements
// and the replacements' creates in separate transactions, and a board
// dying between the two leaves exactly that for the next board to
// repair. Such looks are counted, not failed.
type rolloutWatch struct {
	api       *client.Client
	guid      string
	instances int
	cells     []*simcell.Cell

	mu     sync.Mutex
	report watchReport
	// orphans holds, for every instance on a cell that no row named at a
	// look, when a look first saw it so.
	orphans map[string]time.Time
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
}

type watchReport struct {
	observations int
	// withoutOrdinary counts looks that found an index served by its
	// RETIRING instance alone.
	withoutOrdinary int
	// mostRetiring is the most RETIRING rows seen at one look.
	mostRetiring int
	violations   []string
}

func (r watchReport) String() string {
	return fmt.Sprintf("%d looks, %d with an index served by its RETIRING instance alone, at most %d RETIRING rows at once, %d violations",
		r.observations, r.withoutOrdinary, r.mostRetiring, len(r.violations))
}

func watchRollout(board *runningBoard, guid string, instances int, cells []*simcell.Cell) *rolloutWatch {
	w := &rolloutWatch{api: board.client(), guid: guid, instances: instances, cells: cells,
		orphans: map[string]time.Time{}, quit: make(chan struct{}), done: make(chan struct{})}
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

func (w *rolloutWatch) stop() watchReport {
	w.once.Do(func() { close(w.quit) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.report
}

func (w *rolloutWatch) look() {
	rows, err := w.api.ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: w.guid})
	if err != nil {
		return // not a look: the board did not answer
	}
	var onCells []simcell.Instance
	for _, c := range w.cells {
		onCells = append(onCells, c.Running()...)
		onCells = append(onCells, c.Retiring()...)
	}
	type indexRows struct{ ordinary, retiring, all, serving int }
	perIndex := make([]indexRows, w.instances)
	retiring := 0
	var problems []string
	for _, lrp := range rows {
		i := lrp.GetIndex()
		if i < 0 || int(i) >= w.instances {
			problems = append(problems, fmt.Sprintf("a row of index %d, beyond the %d instances", i, w.instances))
			continue
		}
		perIndex[i].all++
		switch lrp.GetPresence() {
		case models.ActualLRP_ORDINARY:
			perIndex[i].ordinary++
		case models.ActualLRP_RETIRING:
			perIndex[i].retiring++
			retiring++
		}
		if lrp.GetState() == models.ActualLRP_RUNNING && lrp.GetRoutable() {
			perIndex[i].serving++
		}
	}
	withoutOrdinary := false
	for i, p := range perIndex {
		if p.serving == 0 {
			problems = append(problems, fmt.Sprintf("index %d has no RUNNING, routable instance", i))
		}
		if p.ordinary > 1 || p.all > 2 {
			problems = append(problems, fmt.Sprintf("index %d has %d ORDINARY rows of %d", i, p.ordinary, p.all))
		}
		if p.ordinary == 0 {
			withoutOrdinary = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	problems = append(problems, w.lookForOrphans(rows, onCells, time.Now())...)
	w.report.observations++
	if withoutOrdinary {
		w.report.withoutOrdinary++
	}
	w.report.mostRetiring = max(w.report.mostRetiring, retiring)
	for _, p := range problems {
		w.report.violations = append(w.report.violations, time.Now().Format(time.StampMilli)+" "+p+": "+describeRows(rows))
	}
}

// orphanGrace is how long a cell may run an instance no row names: more
// than a board's kill, the other board's takeover and the restart (2–5 s
// on a loaded machine), then a report interval.
const orphanGrace = 15 * time.Second

// lookForOrphans notes the instances on the cells that no row names, and
// reports those seen so for longer than orphanGrace. The rows are read
// before the cells, so an instance claimed in between is an orphan for
// one look; the grace covers it.
func (w *rolloutWatch) lookForOrphans(rows []*models.ActualLRP, onCells []simcell.Instance, now time.Time) []string {
	named := map[string]bool{}
	for _, lrp := range rows {
		named[lrp.GetInstanceGuid()] = true
	}
	var problems []string
	seen := map[string]bool{}
	for _, instance := range onCells {
		if instance.ProcessGuid != w.guid || named[instance.InstanceGuid] {
			continue
		}
		seen[instance.InstanceGuid] = true
		since, ok := w.orphans[instance.InstanceGuid]
		if !ok {
			w.orphans[instance.InstanceGuid] = now
			continue
		}
		if now.Sub(since) > orphanGrace {
			problems = append(problems, fmt.Sprintf("instance %s of index %d (%s) has run with no row for %s",
				instance.InstanceGuid, instance.Index, instance.DefinitionID, now.Sub(since).Round(time.Millisecond)))
		}
	}
	for guid := range w.orphans {
		if !seen[guid] {
			delete(w.orphans, guid)
		}
	}
	return problems
}

func describeRows(rows []*models.ActualLRP) string {
	out := "["
	for i, lrp := range rows {
		if i > 0 {
			out += "; "
		}
		out += fmt.Sprintf("%d %s %s on %q def %s routable=%t stop=%t", lrp.GetIndex(), lrp.GetPresence(), lrp.GetState(),
			lrp.GetCellId(), lrp.GetDefinitionId(), lrp.GetRoutable(), lrp.GetStopRequested())
	}
	return out + "]"
}
