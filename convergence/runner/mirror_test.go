package runner_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// The mirror against a real store, on every dialect: after any sequence
// of writes — clients', reps', and passes planned from the mirror itself —
// the mirror's snapshot is the one a full read gives, and it got there by
// reading only what the log said changed.
var _ = Describe("Mirror", func() {
	for _, dialect := range testdb.MustDialects() {
		It("equals a full read after random writes, reading only what changed, on "+dialect, func() {
			ctx := context.Background()
			database, err := testdb.Create(dialect)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(database.Drop)
			conn, err := sqldb.Open(ctx, dialect, database.DSN)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
			store := sqldb.New(conn, dialect)

			seed := GinkgoRandomSeed()
			w := &randomWriter{ctx: ctx, store: store, r: rand.New(rand.NewPCG(uint64(seed), 18))}
			for i := range 4 {
				w.cell(fmt.Sprintf("cell-%d", i))
			}
			for range 8 {
				w.desireNew()
			}

			mirror := runner.NewMirror(store, nil)
			_, err = mirror.Snapshot(ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			for round := range 25 {
				for range 1 + w.r.IntN(6) {
					w.step(mirror)
				}
				got, err := mirror.Snapshot(ctx, nil)
				Expect(err).NotTo(HaveOccurred())
				want, err := store.ConvergenceSnapshot(ctx, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(snapshotDiff(got, want)).To(BeEmpty(), "round %d (seed %d): mirror - full read +", round, seed)

				guids := w.someGuids(2)
				got, err = mirror.Snapshot(ctx, guids)
				Expect(err).NotTo(HaveOccurred())
				full, err := store.ConvergenceSnapshot(ctx, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(cmp.Diff(got.BoardRollouts, full.Rollouts, protocmp.Transform(), cmpopts.EquateEmpty())).To(BeEmpty(),
					"round %d (seed %d): a targeted snapshot's board rollouts are every record a full read holds", round, seed)
				// The store's own targeted read has no board view (a dry
				// run's): the rest must match it.
				targeted := *got
				targeted.BoardRollouts = nil
				want, err = store.ConvergenceSnapshot(ctx, guids)
				Expect(err).NotTo(HaveOccurred())
				Expect(snapshotDiff(&targeted, want)).To(BeEmpty(), "round %d (seed %d), LRPs %v: mirror - targeted read +", round, seed, guids)
			}
			Expect(mirror.FullReads).To(Equal(1), "every refresh after the first read only what changed")
			Expect(mirror.LRPsRead).To(BeNumerically(">", 0))
		})
	}
})

func snapshotDiff(got, want *convergence.Snapshot) string {
	return cmp.Diff(got, want, protocmp.Transform(), cmpopts.EquateEmpty())
}

// randomWriter makes the writes a board sees: desires, updates, removals,
// reps claiming, starting, crashing and removing instances, cells coming
// and draining, and passes planned from the mirror.
type randomWriter struct {
	ctx   context.Context
	store *sqldb.SQLDB
	r     *rand.Rand
	guids []string
	cells []string
	next  int
}

func (w *randomWriter) someGuids(n int) []string {
	var out []string
	for range n {
		if len(w.guids) > 0 {
			out = append(out, w.guids[w.r.IntN(len(w.guids))])
		}
	}
	return append(out, "never-desired")
}

func (w *randomWriter) cell(id string) {
	GinkgoHelper()
	cell := &models.Cell{
		CellId: id, RepUrl: "http://" + id + ":1800", Zone: fmt.Sprintf("z%d", w.r.IntN(2)),
		Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Instances: 40},
	}
	Expect(w.store.RegisterCell(w.ctx, cell, time.Hour)).To(Succeed())
	w.cells = append(w.cells, id)
}

func (w *randomWriter) desireNew() {
	GinkgoHelper()
	guid := fmt.Sprintf("lrp-%03d", w.next)
	w.next++
	_, err := w.store.DesireLRP(w.ctx, &models.DesiredLRP{
		ProcessGuid: guid, Domain: "apps", Instances: int32(1 + w.r.IntN(4)),
		Definition: &models.LRPDefinition{
			DefinitionId: "v1", Action: &models.RunAction{Path: "/bin/" + guid},
			MemoryMb: 64, DiskMb: 64,
		},
	})
	Expect(err).NotTo(HaveOccurred())
	w.guids = append(w.guids, guid)
}

// step makes one random write. Writes a rep or client could be refused
// (the row moved on) are allowed to fail: what matters is what they did.
func (w *randomWriter) step(mirror *runner.Mirror) {
	GinkgoHelper()
	switch w.r.IntN(12) {
	case 0:
		w.desireNew()
	case 1:
		instances := int32(w.r.IntN(5))
		_, _ = w.store.UpdateDesiredLRP(w.ctx, w.pick(), &models.DesiredLRPUpdate{Instances: &instances})
	case 2:
		def := &models.LRPDefinition{
			DefinitionId: fmt.Sprintf("v%d", 2+w.r.IntN(1000)), Action: &models.RunAction{Path: "/bin/next"},
			MemoryMb: int32(32 + 32*w.r.IntN(3)), DiskMb: 64,
		}
		_, _ = w.store.UpdateDesiredLRP(w.ctx, w.pick(), &models.DesiredLRPUpdate{Definition: def})
	case 3:
		_ = w.store.RemoveDesiredLRP(w.ctx, w.pick())
	case 4:
		if w.r.IntN(2) == 0 {
			w.cell(fmt.Sprintf("cell-%d", len(w.cells)))
		} else {
			_ = w.store.DrainCell(w.ctx, w.cells[w.r.IntN(len(w.cells))])
		}
	case 5, 6:
		w.repActs()
	case 7:
		w.controlRollout()
	case 8:
		w.reportOccupancy()
	default:
		w.pass(mirror)
	}
}

// controlRollout pauses, resumes, aborts or rolls back an LRP's rollout,
// or cancels its newest operation; most are refused when nothing is under
// way.
func (w *randomWriter) controlRollout() {
	guid := w.pick()
	switch w.r.IntN(5) {
	case 0:
		_, _ = w.store.PauseRollout(w.ctx, guid)
	case 1:
		_, _ = w.store.ResumeRollout(w.ctx, guid)
	case 2:
		_, _ = w.store.AbortRollout(w.ctx, guid, false)
	case 3:
		_, _ = w.store.Rollback(w.ctx, guid, "v1", false)
	default:
		ops, _, err := w.store.Operations(w.ctx, db.OperationFilter{ProcessGuid: guid})
		if err == nil && len(ops) > 0 {
			_, _ = w.store.CancelOperation(w.ctx, ops[len(ops)-1].GetId())
		}
	}
}

// reportOccupancy has a cell report one of its running instances
// occupied or free.
func (w *randomWriter) reportOccupancy() {
	GinkgoHelper()
	lrps, err := w.store.ActualLRPs(w.ctx, db.ActualLRPFilter{ProcessGuid: w.pick()})
	Expect(err).NotTo(HaveOccurred())
	for _, lrp := range lrps {
		if lrp.GetState() != models.ActualLRP_RUNNING {
			continue
		}
		_, _ = w.store.ReportOccupancy(w.ctx, lrp.GetCellId(), []*models.OccupancyChange{{
			ProcessGuid: lrp.GetProcessGuid(), Index: lrp.GetIndex(), Presence: lrp.GetPresence(),
			InstanceGuid: lrp.GetInstanceGuid(), Occupied: w.r.IntN(2) == 0,
		}})
	}
}

func (w *randomWriter) pick() string {
	return w.guids[w.r.IntN(len(w.guids))]
}

// repActs has the rep of a placed instance claim and start it, or crash
// or remove a running one.
func (w *randomWriter) repActs() {
	GinkgoHelper()
	lrps, err := w.store.ActualLRPs(w.ctx, db.ActualLRPFilter{ProcessGuid: w.pick()})
	Expect(err).NotTo(HaveOccurred())
	for _, lrp := range lrps {
		if lrp.GetCellId() == "" {
			continue
		}
		key := models.ActualLRPKey{ProcessGuid: lrp.GetProcessGuid(), Index: lrp.GetIndex(), Presence: lrp.GetPresence()}
		caller := models.Caller{InstanceGuid: lrp.GetInstanceGuid(), CellID: lrp.GetCellId()}
		switch {
		case lrp.GetState() == models.ActualLRP_UNCLAIMED || lrp.GetState() == models.ActualLRP_CLAIMED:
			_, _ = w.store.ClaimActualLRP(w.ctx, key, caller)
			_, _ = w.store.StartActualLRP(w.ctx, key, caller, &models.NetInfo{Address: "10.0.0.1"}, true)
		case lrp.GetState() == models.ActualLRP_RUNNING && w.r.IntN(2) == 0:
			_, _ = w.store.CrashActualLRP(w.ctx, key, caller, "exit 1")
		case lrp.GetState() == models.ActualLRP_RUNNING:
			_ = w.store.RemoveActualLRP(w.ctx, key, caller)
		}
	}
}

// pass plans from the mirror and applies the plan, as the runner does.
func (w *randomWriter) pass(mirror *runner.Mirror) {
	GinkgoHelper()
	var guids []string
	if w.r.IntN(3) == 0 {
		guids = w.someGuids(1)
	}
	snapshot, err := mirror.Snapshot(w.ctx, guids)
	Expect(err).NotTo(HaveOccurred())
	plan := convergence.Compute(snapshot, time.Now(), convergence.DefaultConfig())
	result, err := w.store.ApplyConvergence(w.ctx, &plan.Writes)
	mirror.Applied(&plan.Writes, result, err)
	Expect(err).NotTo(HaveOccurred())
}
