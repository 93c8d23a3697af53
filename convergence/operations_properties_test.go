package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// Operations in progress under leases of every kind — this board's, a
// dead board's, a live other board's, none — carried pass after pass by
// board b2 (a pass a second): after every pass, each operation still in
// progress has a live lease that lasts past the next pass, or another
// board's live lease; none goes without a live lease for longer than one
// lease TTL and one pass.
var _ = Describe("Operation leases over many passes", func() {
	It("never leave an operation in progress without a live lease for longer than a TTL and a pass", func() {
		cfg := convergence.DefaultConfig()
		cfg.Board, cfg.OperationLeaseTTL = "b2", 15*time.Second
		ttl := cfg.OperationLeaseTTL.Nanoseconds()
		for seed := range uint64(100) {
			r := rand.New(rand.NewPCG(seed, 31))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			s := leasedSnapshot(r, now)
			unleasedSince := map[string]int64{}
			for pass := 0; pass < 60; pass++ {
				plan := convergence.Compute(s, now, cfg)
				applyOperationWrites(s, plan)
				for _, op := range s.Operations {
					live := op.LeaseOwner != "" && op.LeaseExpiresAt > now.UnixNano()
					if op.LeaseOwner == "b2" {
						Expect(op.LeaseExpiresAt-now.UnixNano()).To(BeNumerically(">=", ttl/2),
							"seed %d pass %d: %s: b2's own lease not renewed in time", seed, pass, op.ID)
					}
					if live {
						delete(unleasedSince, op.ID)
						continue
					}
					if _, ok := unleasedSince[op.ID]; !ok {
						unleasedSince[op.ID] = now.UnixNano()
					}
					Expect(now.UnixNano()-unleasedSince[op.ID]).To(BeNumerically("<=", ttl+time.Second.Nanoseconds()),
						"seed %d pass %d: %s without a live lease", seed, pass, op.ID)
				}
				now = now.Add(time.Second)
			}
		}
	})
})

// leasedSnapshot is a few LRPs each in the middle of a rollout (a
// RETIRING instance beside a replacement that never starts, so the
// rollout stays PROGRESSING) carried by an operation under a random lease.
func leasedSnapshot(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	s.Cells = append(s.Cells, convergence.CellRow{CellID: "cell-a", Zone: "z1",
		Capacity: convergence.Resources{MemoryMB: 1 << 20, DiskMB: 1 << 20, Instances: 1000}, ExpiresAt: now.Add(time.Hour).UnixNano()})
	owners := []string{"", "b1", "b2", "b3"}
	for l := range 1 + r.IntN(4) {
		guid := fmt.Sprintf("lrp-%d", l)
		id := fmt.Sprintf("op-%d", l)
		s.Desired = append(s.Desired, convergence.DesiredSchedule{ProcessGuid: guid, Domain: "apps", Instances: 1,
			ActiveDefinitionID: "v2", HealthyDefinitionID: "v1", MemoryMB: 64, DiskMB: 64})
		s.Actual = append(s.Actual,
			convergence.ActualRow{ProcessGuid: guid, Index: 0, Presence: ordinary, State: claimedState, Domain: "apps",
				CellID: "cell-a", DefinitionID: "v2", Since: now.UnixNano(), ModificationIndex: 1, MemoryMB: 64, DiskMB: 64},
			convergence.ActualRow{ProcessGuid: guid, Index: 0, Presence: models.ActualLRP_RETIRING, State: runningState, Domain: "apps",
				CellID: "cell-a", DefinitionID: "v1", Routable: true, Since: now.UnixNano(), ModificationIndex: 1, MemoryMB: 64, DiskMB: 64})
		s.Rollouts = append(s.Rollouts, convergence.RolloutRow{ProcessGuid: guid, State: models.RolloutStatus_PROGRESSING,
			DefinitionID: "v2", StartedAt: now.UnixNano(), ProgressAt: now.UnixNano(), InFlight: 1,
			Reason: "rolling from v1 to v2", ModificationIndex: 1, OperationID: id})
		op := convergence.OperationRow{ID: id, ProcessGuid: guid, Sequence: 2, Kind: models.Operation_UPDATE_DEFINITION,
			Status: models.Operation_IN_PROGRESS, DefinitionID: "v2", DefinitionStored: true, ModificationIndex: 1,
			LeaseOwner: owners[r.IntN(len(owners))]}
		if op.LeaseOwner != "" {
			op.LeaseExpiresAt = now.Add(time.Duration(r.IntN(40)-20) * time.Second).UnixNano()
		}
		s.Operations = append(s.Operations, op)
	}
	return s
}

// applyOperationWrites carries a plan's operation writes into s as the
// store would: compare-and-set, lease taken, ended operations gone.
func applyOperationWrites(s *convergence.Snapshot, plan *convergence.Plan) {
	for _, w := range plan.Writes.Operations {
		for i := range s.Operations {
			op := &s.Operations[i]
			if op.ID != w.ID {
				continue
			}
			Expect(op.ModificationIndex).To(Equal(w.ExpectModificationIndex))
			op.ModificationIndex++
			if w.LeaseOwner != "" {
				op.LeaseOwner, op.LeaseExpiresAt = w.LeaseOwner, w.LeaseExpiresAt
			}
			if w.Status != models.Operation_STATUS_UNKNOWN {
				Expect(models.CheckOperationTransition(op.Status, w.Status)).To(Succeed())
				op.Status = w.Status
			}
			if w.SetBlockedBy {
				op.BlockedBy = w.BlockedBy
			}
		}
	}
	kept := s.Operations[:0]
	for _, op := range s.Operations {
		if !models.OperationEnded(op.Status) {
			kept = append(kept, op)
		}
	}
	s.Operations = kept
}
