package sqldb_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// The write contract, tested both ways: a random board is stored, read
// back as a snapshot, planned with convergence.Compute, and the plan is
// applied twice — in memory by convergence.ApplyPlan (the store of the
// rollout dry run) and in SQL by ApplyConvergence. Read back, the SQL
// board must equal the in-memory one: the SET clauses of
// convergence_apply.go and the effect functions of package convergence
// must agree on every write they both make.
//
// Normalized before comparing, as legitimately different:
//   - PlacementEpoch: ApplyConvergence moves it on once per transaction
//     that places; the in-memory apply has no epoch to move.
//   - Definitions: a snapshot reads them only for LRPs with an unsettled
//     rollout record, so the in-memory apply knows those of the LRPs that
//     had one before the plan, and keeps them when a write settles or
//     deletes the record; a read after the plan returns those of the LRPs
//     that have one after it. Compared are the LRPs with a record both
//     before and after.
//
// CORKBOARD_DIFFERENTIAL_SEEDS sets the number of boards per dialect
// (default differentialSeeds).
const differentialSeeds = 30

var _ = forEachDialect("ApplyConvergence against the in-memory apply", func(b *board) {
	It("leaves the board the in-memory apply leaves, for every write group", func() {
		seeds := uint64(differentialSeeds)
		if v := os.Getenv("CORKBOARD_DIFFERENTIAL_SEEDS"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			Expect(err).NotTo(HaveOccurred(), "CORKBOARD_DIFFERENTIAL_SEEDS")
			seeds = n
		}
		cfg := convergence.DefaultConfig()
		seen := map[string]int{}
		for seed := range seeds {
			b.reset()
			now := b.clock.Now()
			store := newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now))
			seedBoard(b, randomBoard(rand.New(rand.NewPCG(seed, 27)), now))

			before, err := store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred(), "seed %d", seed)
			plan := convergence.Compute(before, now, cfg)
			Expect(plan.Writes.Operations).To(BeEmpty(), "seed %d: no operation is stored", seed)
			countGroups(seen, &plan.Writes)

			inMemory, err := convergence.ApplyPlan(before, plan, now)
			Expect(err).NotTo(HaveOccurred(), "seed %d", seed)
			result, err := store.ApplyConvergence(b.ctx, &plan.Writes)
			Expect(err).NotTo(HaveOccurred(), "seed %d", seed)
			Expect(result.Skipped).To(BeZero(), "seed %d: nobody else writes, no write may be skipped", seed)
			inSQL, err := store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred(), "seed %d", seed)

			normalizeApplied(inMemory, before)
			normalizeApplied(inSQL, before)
			Expect(inSQL).To(BeComparableTo(inMemory, protocmp.Transform(), cmpopts.EquateEmpty()),
				"seed %d: SQL (-) and memory (+) disagree after %+v", seed, plan.Writes)
		}
		GinkgoWriter.Printf("write groups over %d seeds: %v\n", seeds, seen)
		if seeds >= differentialSeeds {
			// The boards must exercise every group, or the comparison
			// proves nothing about the ones they miss.
			for _, group := range writeGroups {
				Expect(seen[group]).To(BeNumerically(">", 0), "no plan of %d seeds has a %s write: %v", seeds, group, seen)
			}
		}
	})
})

// writeGroups are the groups of convergence.ConvergenceWrites the comparison
// covers: all but Operations, which the in-memory apply does not simulate.
var writeGroups = []string{
	"Autoscale", "Delete", "Promote", "MarkSuspect", "Retire", "RequestStop", "Create", "Restart", "Redefine",
	"Unassign", "Place", "PlacementFailed", "Rollouts", "DeleteDefinitions",
}

func countGroups(seen map[string]int, w *convergence.ConvergenceWrites) {
	for group, n := range map[string]int{
		"Autoscale": len(w.Autoscale), "Delete": len(w.Delete), "Promote": len(w.Promote),
		"MarkSuspect": len(w.MarkSuspect), "Retire": len(w.Retire), "RequestStop": len(w.RequestStop),
		"Create": len(w.Create), "Restart": len(w.Restart), "Redefine": len(w.Redefine), "Unassign": len(w.Unassign),
		"Place": len(w.Place), "PlacementFailed": len(w.PlacementFailed), "Rollouts": len(w.Rollouts),
		"DeleteDefinitions": len(w.DeleteDefinitions),
	} {
		seen[group] += n
	}
}

// normalizeApplied drops from s, the board after a plan for before, what
// the two applies legitimately differ in (see above), and puts the rows in
// key order.
func normalizeApplied(s, before *convergence.Snapshot) {
	s.PlacementEpoch = 0
	recorded := func(s *convergence.Snapshot, guid string) bool {
		return slices.ContainsFunc(s.Rollouts, func(rec convergence.RolloutRow) bool { return rec.ProcessGuid == guid })
	}
	s.Definitions = slices.DeleteFunc(slices.Clone(s.Definitions), func(d convergence.DefinitionRow) bool {
		return !recorded(before, d.ProcessGuid) || !recorded(s, d.ProcessGuid)
	})
	s.Actual = slices.Clone(s.Actual)
	slices.SortFunc(s.Actual, func(a, b convergence.ActualRow) int {
		return cmp.Or(cmp.Compare(a.ProcessGuid, b.ProcessGuid), cmp.Compare(a.Index, b.Index), cmp.Compare(a.Presence, b.Presence))
	})
}

// randomBoard is a board as a snapshot describes it, to be stored by
// seedBoard: cells present, expired and draining; LRPs desired or gone,
// each with three definitions, rows on any of them in every presence and
// state, a rollout record in any state, an update strategy and autoscaling
// now and then. Resources of rows and LRPs are left out: the store reads
// them from the definitions.
func randomBoard(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	if r.IntN(2) == 0 {
		s.FreshDomains = append(s.FreshDomains, "legacy")
	}
	ago := func(most time.Duration) int64 { return now.Add(-time.Duration(r.Int64N(int64(most)))).UnixNano() }
	tagSets := [][]string{nil, nil, {"gpu"}, {"ssd"}}
	var cellIDs []string
	for i := range 1 + r.IntN(6) {
		c := convergence.CellRow{
			CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", r.IntN(2)),
			Capacity: convergence.Resources{
				MemoryMB: int32(256 * (1 + r.IntN(16))), DiskMB: int32(512 * (1 + r.IntN(16))), Instances: int32(r.IntN(12)),
			},
			PlacementTags: tagSets[r.IntN(len(tagSets))],
			ExpiresAt:     now.Add(30 * time.Second).UnixNano(),
			Draining:      r.IntN(6) == 0,
		}
		if r.IntN(5) == 0 {
			c.ExpiresAt = ago(time.Minute)
		}
		cellIDs = append(cellIDs, c.CellID)
		s.Cells = append(s.Cells, c)
	}
	cellIDs = append(cellIDs, "ghost")

	defs := []string{"v1", "v2", "v3"}
	counts := []string{"", "0", "1", "2", "25%", "100%"}
	rolloutStates := []models.RolloutStatus_State{
		models.RolloutStatus_PROGRESSING, models.RolloutStatus_PROGRESSING, models.RolloutStatus_COMPLETE,
		models.RolloutStatus_FAILED, models.RolloutStatus_REVERTED,
	}
	actualStates := []models.ActualLRP_State{
		models.ActualLRP_UNCLAIMED, models.ActualLRP_CLAIMED, models.ActualLRP_RUNNING, models.ActualLRP_RUNNING,
		models.ActualLRP_CRASHED,
	}
	for l := range 1 + r.IntN(6) {
		guid := fmt.Sprintf("lrp-%02d", l)
		domain := []string{"apps", "legacy"}[r.IntN(2)]
		for i, id := range defs {
			s.Definitions = append(s.Definitions, convergence.DefinitionRow{
				ProcessGuid: guid, DefinitionID: id, CreatedAt: now.Add(-time.Duration(3-i) * time.Hour).UnixNano(),
				MemoryMB: int32(64 * (1 + r.IntN(4))), DiskMB: int32(128 * (1 + r.IntN(4))),
			})
		}
		instances := int32(r.IntN(6))
		desired := r.IntN(6) != 0
		active := defs[1+r.IntN(2)]
		if desired {
			d := convergence.DesiredSchedule{
				ProcessGuid: guid, Domain: domain, Instances: instances, PlacementTags: tagSets[r.IntN(len(tagSets))],
				ActiveDefinitionID: active, HealthyDefinitionID: []string{"", "v1", "v2", active}[r.IntN(4)],
				ModificationIndex: int64(1 + r.IntN(5)),
			}
			if r.IntN(3) != 0 {
				d.UpdateStrategy = &models.UpdateStrategy{
					MaxSurge: counts[r.IntN(len(counts))], MaxUnavailable: counts[r.IntN(len(counts))],
					MinReadyMs: int64(r.IntN(3)) * 10_000, ProgressDeadlineMs: int64(r.IntN(3)) * 300_000,
					AutoRevert: r.IntN(2) == 0, HistoryLimit: int32(r.IntN(3)),
				}
			}
			if r.IntN(4) == 0 {
				d.Autoscaling = autoscalingSettings(1, 6)
				d.Instances = 1 + int32(r.IntN(6))
				instances = d.Instances
				if r.IntN(2) == 0 {
					d.Autoscaler = &models.AutoscalerStatus{Recommendations: []*models.AutoscalerRecommendation{
						{At: ago(15 * time.Minute), Wanted: 1 + int32(r.IntN(6))},
					}}
				}
			}
			s.Desired = append(s.Desired, d)
		}
		if !desired || r.IntN(2) == 0 {
			rec := convergence.RolloutRow{
				ProcessGuid: guid, State: rolloutStates[r.IntN(len(rolloutStates))], Reason: "rolling",
				DefinitionID: active, StartedAt: ago(20 * time.Minute), ProgressAt: ago(20 * time.Minute),
				UpdatedInstances: int32(r.IntN(4)), InFlight: int32(r.IntN(2)), ModificationIndex: int64(1 + r.IntN(5)),
			}
			if rec.State == models.RolloutStatus_REVERTED || rec.State == models.RolloutStatus_FAILED {
				rec.FailedDefinitionID = defs[r.IntN(3)]
				rec.FinishedAt = ago(time.Minute)
			}
			s.Rollouts = append(s.Rollouts, rec)
		}
		for index := range instances + 2 {
			for _, presence := range []models.ActualLRP_Presence{
				models.ActualLRP_ORDINARY, models.ActualLRP_SUSPECT, models.ActualLRP_RETIRING, models.ActualLRP_EVACUATING,
			} {
				odds := map[models.ActualLRP_Presence]int{models.ActualLRP_ORDINARY: 5}[presence] + 1
				if r.IntN(7) >= odds {
					continue
				}
				row := convergence.ActualRow{
					ProcessGuid: guid, Index: index, Presence: presence, State: actualStates[r.IntN(len(actualStates))],
					Domain: domain, DefinitionID: defs[r.IntN(3)], Since: ago(20 * time.Minute),
					ModificationIndex: int64(1 + r.IntN(9)),
				}
				switch row.State {
				case models.ActualLRP_UNCLAIMED:
					if r.IntN(3) == 0 {
						row.CellID = cellIDs[r.IntN(len(cellIDs))]
					} else if r.IntN(4) != 0 {
						row.PlacementError = "insufficient resources"
					}
				case models.ActualLRP_CRASHED:
					row.InstanceGuid = fmt.Sprintf("ig-%s-%d-%d", guid, index, presence)
					row.CellID = cellIDs[r.IntN(len(cellIDs))]
					row.CrashCount, row.CrashReason = []int32{1, 3, 5, 200}[r.IntN(4)], "exit status 1"
				default:
					row.InstanceGuid = fmt.Sprintf("ig-%s-%d-%d", guid, index, presence)
					row.CellID = cellIDs[r.IntN(len(cellIDs))]
					row.Occupied = r.IntN(2) == 0
					row.Routable = row.State == models.ActualLRP_RUNNING && r.IntN(5) != 0
				}
				if presence == models.ActualLRP_RETIRING {
					row.StopRequested = r.IntN(3) == 0
				}
				s.Actual = append(s.Actual, row)
			}
		}
	}
	rollingBoard(r, s, now)
	return s
}

// rollingBoard adds to s up to two LRPs in the middle of a rolling update
// from v1 to v2 with a random strategy: instances RUNNING on v1, some
// already replaced by one on v2 beside their RETIRING row, some waiting
// for a cell, on a board with one more roomy cell. They make the plans
// retire (kept running or stopped), request stops, place rows that failed
// before and count the rollout on.
func rollingBoard(r *rand.Rand, s *convergence.Snapshot, now time.Time) {
	counts := []string{"0", "1", "2", "50%", "100%"}
	lrps := r.IntN(3)
	if lrps > 0 {
		s.Cells = append(s.Cells, convergence.CellRow{
			CellID: "cell-roomy", Zone: "z0", Capacity: convergence.Resources{MemoryMB: 4096, DiskMB: 4096, Instances: 20},
			ExpiresAt: now.Add(time.Minute).UnixNano(),
		})
	}
	for l := range lrps {
		guid := fmt.Sprintf("rolling-%d", l)
		instances := int32(2 + r.IntN(5))
		s.Desired = append(s.Desired, convergence.DesiredSchedule{
			ProcessGuid: guid, Domain: "apps", Instances: instances, ActiveDefinitionID: "v2", HealthyDefinitionID: "v1",
			UpdateStrategy:    &models.UpdateStrategy{MaxSurge: counts[r.IntN(len(counts))], MaxUnavailable: counts[r.IntN(len(counts))]},
			ModificationIndex: 2,
		})
		s.Rollouts = append(s.Rollouts, convergence.RolloutRow{
			ProcessGuid: guid, State: models.RolloutStatus_PROGRESSING, Reason: convergence.RollingReason("v1", "v2"),
			DefinitionID: "v2", StartedAt: now.Add(-time.Minute).UnixNano(), ProgressAt: now.Add(-time.Minute).UnixNano(),
			ModificationIndex: 1,
		})
		for i, id := range []string{"v2", "v1"} {
			s.Definitions = append(s.Definitions, convergence.DefinitionRow{
				ProcessGuid: guid, DefinitionID: id, CreatedAt: now.Add(-time.Duration(i+1) * time.Hour).UnixNano(), MemoryMB: 64, DiskMB: 64,
			})
		}
		for index := range instances {
			row := convergence.ActualRow{
				ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_RUNNING,
				Domain: "apps", InstanceGuid: fmt.Sprintf("ig-%s-%d", guid, index), CellID: s.Cells[r.IntN(len(s.Cells))].CellID,
				DefinitionID: "v1", Since: now.Add(-time.Hour).UnixNano(), Routable: true, Occupied: r.IntN(2) == 0,
				ModificationIndex: 3,
			}
			switch r.IntN(4) {
			case 0:
				// A replacement that found no room last time.
				row.State, row.CellID, row.InstanceGuid, row.Routable, row.Occupied = models.ActualLRP_UNCLAIMED, "", "", false, false
				row.DefinitionID, row.PlacementError = "v2", "insufficient resources"
			case 1:
				retiring := row
				retiring.Presence = models.ActualLRP_RETIRING
				s.Actual = append(s.Actual, retiring)
				row.DefinitionID, row.InstanceGuid = "v2", row.InstanceGuid+"-v2"
				row.Since = now.Add(-time.Duration(r.IntN(60)) * time.Second).UnixNano()
			}
			s.Actual = append(s.Actual, row)
		}
	}
}

// seedBoard stores s straight into the tables, in one transaction.
func seedBoard(b *board, s *convergence.Snapshot) {
	GinkgoHelper()
	tx, err := b.conn.BeginTx(b.ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	defer tx.Rollback()
	exec := func(query string, args ...any) {
		GinkgoHelper()
		_, err := tx.ExecContext(b.ctx, dialect.Rebind(dialect.Name(b.dialect), query), args...)
		Expect(err).NotTo(HaveOccurred())
	}
	now := b.clock.Now().UnixNano()
	for _, domain := range []string{"apps", "legacy"} {
		expires := now - int64(time.Second)
		if slices.Contains(s.FreshDomains, domain) {
			expires = now + int64(time.Minute)
		}
		exec("INSERT INTO domains (domain, expires_at) VALUES (?, ?)", domain, expires)
	}
	for _, c := range s.Cells {
		exec(`INSERT INTO cells (cell_id, rep_url, zone, memory_mb, disk_mb, max_instances, placement_tags,
 expires_at, registered_at, draining) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.CellID, "http://"+c.CellID, c.Zone, c.Capacity.MemoryMB, c.Capacity.DiskMB, c.Capacity.Instances,
			jsonTags(c.PlacementTags), c.ExpiresAt, int64(0), c.Draining)
	}
	for _, d := range s.Desired {
		exec(`INSERT INTO desired_lrps (process_guid, domain, instances, placement_tags, routes, annotation,
 active_definition_id, healthy_definition_id, update_strategy, autoscaling, autoscaler,
 modification_tag_epoch, modification_tag_index, created_at, updated_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ProcessGuid, d.Domain, d.Instances, jsonTags(d.PlacementTags), "", "", d.ActiveDefinitionID,
			d.HealthyDefinitionID, blob(d.UpdateStrategy, d.UpdateStrategy == nil), blob(d.Autoscaling, d.Autoscaling == nil),
			blob(d.Autoscaler, d.Autoscaler == nil), "epoch", d.ModificationIndex, now, now)
	}
	for _, def := range s.Definitions {
		exec(`INSERT INTO run_infos (process_guid, definition_id, content_hash, memory_mb, disk_mb, definition, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)`,
			def.ProcessGuid, def.DefinitionID, "hash-"+def.DefinitionID, def.MemoryMB, def.DiskMB, []byte{}, def.CreatedAt)
	}
	for _, rec := range s.Rollouts {
		exec(`INSERT INTO rollouts (process_guid, state, reason, definition_id, failed_definition_id, started_at,
 progress_at, finished_at, updated_instances, in_flight, settled, modification_index, operation_id, stage)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			rec.ProcessGuid, rec.State.String(), rec.Reason, rec.DefinitionID, rec.FailedDefinitionID, rec.StartedAt,
			rec.ProgressAt, rec.FinishedAt, rec.UpdatedInstances, rec.InFlight, false, rec.ModificationIndex, "", nil)
	}
	for _, r := range s.Actual {
		exec(`INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, instance_guid, cell_id,
 definition_id, state, crash_count, crash_reason, since, placement_error, routable, occupied, stop_requested,
 modification_tag_epoch, modification_tag_index) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ProcessGuid, r.Index, r.Presence.String(), r.Domain, r.InstanceGuid, r.CellID, r.DefinitionID,
			r.State.String(), r.CrashCount, r.CrashReason, r.Since, r.PlacementError, r.Routable, r.Occupied,
			r.StopRequested, "epoch", r.ModificationIndex)
	}
	Expect(tx.Commit()).To(Succeed())
}

func jsonTags(tags []string) string {
	if len(tags) == 0 {
		return "[]"
	}
	out, err := json.Marshal(tags)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// blob is a message as its column stores it: NULL when unset.
func blob(m proto.Message, isNil bool) any {
	if isNil {
		return nil
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	Expect(err).NotTo(HaveOccurred())
	return out
}
