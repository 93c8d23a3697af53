package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// Staged phases over many passes, on random LRPs, strategies and phases:
// time steps of random length, crashes (which pause a phase by itself),
// scale changes, and an operator who resumes paused phases and promotes
// holding ones. After every pass, for every LRP in a staged phase:
//
//   - the indices on the active definition never outnumber the share's
//     allowed count, ceil(instances × share / 100), except by what a
//     scale-down left over;
//   - an index on the active definition stays on it (the cohort only
//     grows), except that a scale-down removes the indices it removes.
var _ = Describe("Staged phases over many passes", func() {
	It("never move more indices than the share allows, and never move one back", func() {
		cfg := convergence.DefaultConfig()
		completed, held, paused := 0, 0, 0
		for seed := range uint64(120) {
			r := rand.New(rand.NewPCG(seed, 12))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			s := stagedSnapshot(r, now)
			moved := movedIndices(s)
			for pass := 0; pass < 300; pass++ {
				planned := map[string]int32{}
				stages := map[string]*models.RolloutStage{}
				for _, d := range s.Desired {
					planned[d.ProcessGuid] = d.Instances
					if rec := record(s, d.ProcessGuid); rec != nil && rec.State != models.RolloutStatus_COMPLETE {
						stages[d.ProcessGuid] = rec.Stage
					}
				}
				planNow := now.UnixNano()
				plan := convergence.Compute(s, now, cfg)
				after, err := convergence.ApplyPlan(s, plan, now)
				Expect(err).NotTo(HaveOccurred(), "seed %d pass %d", seed, pass)
				for _, rec := range after.Rollouts {
					switch {
					case rec.State == models.RolloutStatus_HOLDING:
						held++
					case rec.Stage.GetPaused():
						paused++
					}
				}
				now = now.Add(time.Duration(1+r.IntN(3000)) * time.Millisecond)
				s = playCells(after, now, func() bool { return r.IntN(12) == 0 })
				s = operate(r, s, now)

				next := movedIndices(s)
				for _, d := range s.Desired {
					guid := d.ProcessGuid
					before := moved[guid]
					for index := range before {
						// A scale-down (this plan's, or one just asked)
						// removes indices.
						if index < min(d.Instances, planned[guid]) {
							Expect(next[guid]).To(HaveKey(index),
								"seed %d pass %d: %s/%d was moved back off %s: %v", seed, pass, guid, index, d.ActiveDefinitionID, plan.Reasons)
						}
					}
					stage := stages[guid]
					if stage == nil {
						continue
					}
					// As the plan saw it: its phase, time and instance count.
					allowed := models.StageAllowed(models.StageShare(stage, planNow), planned[guid])
					wanted := func(indices map[int32]bool) int {
						n := 0
						for index := range indices {
							if index < planned[guid] {
								n++
							}
						}
						return n
					}
					kept, now := wanted(before), wanted(next[guid])
					Expect(now).To(BeNumerically("<=", max(int(allowed), kept)),
						"seed %d pass %d: %s has %d indices on %s, the share allows %d (%d were before)",
						seed, pass, guid, now, d.ActiveDefinitionID, allowed, kept)
				}
				moved = next
				if len(s.Rollouts) == 0 {
					completed++
					break
				}
			}
		}
		// The runs did what the test is about.
		Expect(completed).To(BeNumerically(">", 20), "rollouts completed")
		Expect(held).To(BeNumerically(">", 0), "passes in which a phase held")
		Expect(paused).To(BeNumerically(">", 0), "passes in which a phase was paused")
	})
})

// stagedSnapshot is a few LRPs running v1, each just updated to v2 in a
// staged phase of random target and rate.
func stagedSnapshot(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := rolloutSnapshot(r, now)
	targets := []float64{5, 10, 25, 33, 50, 100}
	for i := range s.Rollouts {
		rec := &s.Rollouts[i]
		stage := &models.RolloutStage{
			TargetPercent:  targets[r.IntN(len(targets))],
			Seed:           fmt.Sprintf("seed-%d", r.IntN(1000)),
			PhaseStartedAt: now.UnixNano(),
			WatchingSince:  now.UnixNano(),
		}
		if r.IntN(4) > 0 {
			stage.SafeRate = &models.SafeRate{Percent: float64(5 + r.IntN(40)), PerMs: int64(1000 + r.IntN(9000))}
		}
		rec.Stage = stage
	}
	return s
}

// operate plays the operator and the scheduler around the board: a paused
// phase is resumed now and then, a holding one promoted (up to 100%), and
// now and then an LRP is scaled.
func operate(r *rand.Rand, s *convergence.Snapshot, now time.Time) *convergence.Snapshot {
	next := *s
	next.Rollouts = slices.Clone(s.Rollouts)
	next.Desired = slices.Clone(s.Desired)
	at := now.UnixNano()
	for i := range next.Rollouts {
		rec := &next.Rollouts[i]
		if rec.Stage == nil {
			continue
		}
		stage := proto.Clone(rec.Stage).(*models.RolloutStage)
		switch {
		case stage.Paused && r.IntN(4) == 0:
			stage.PausedNanos += at - stage.PausedAt
			rec.ProgressAt += at - stage.PausedAt
			stage.Paused, stage.PausedAt, stage.PauseReason, stage.WatchingSince = false, 0, "", at
		case rec.State == models.RolloutStatus_HOLDING && r.IntN(3) == 0:
			share := models.StageShare(stage, at)
			stage.PriorPercent, stage.TargetPercent = share, min(100, share*2+10)
			stage.PhaseStartedAt, stage.WatchingSince, stage.PausedNanos = at, at, 0
			rec.State, rec.ProgressAt = models.RolloutStatus_PROGRESSING, at
		default:
			continue
		}
		rec.Stage = stage
		rec.ModificationIndex++
	}
	for i := range next.Desired {
		if r.IntN(40) == 0 {
			next.Desired[i].Instances = int32(1 + r.IntN(12))
		}
	}
	return &next
}

// movedIndices lists, per LRP, the indices whose ORDINARY instance runs
// the active definition.
func movedIndices(s *convergence.Snapshot) map[string]map[int32]bool {
	active := map[string]string{}
	for _, d := range s.Desired {
		active[d.ProcessGuid] = d.ActiveDefinitionID
	}
	moved := map[string]map[int32]bool{}
	for _, row := range s.Actual {
		if row.Presence == ordinary && row.DefinitionID == active[row.ProcessGuid] {
			if moved[row.ProcessGuid] == nil {
				moved[row.ProcessGuid] = map[int32]bool{}
			}
			moved[row.ProcessGuid][row.Index] = true
		}
	}
	return moved
}

func record(s *convergence.Snapshot, guid string) *convergence.RolloutRow {
	for i := range s.Rollouts {
		if s.Rollouts[i].ProcessGuid == guid {
			return &s.Rollouts[i]
		}
	}
	return nil
}
