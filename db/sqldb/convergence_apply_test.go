package sqldb_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// recordedEvents is an events sink that keeps what it is given.
type recordedEvents struct {
	mu     sync.Mutex
	events []models.Event
}

func (r *recordedEvents) Publish(events ...models.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
}

func (r *recordedEvents) all() []models.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]models.Event(nil), r.events...)
}

func versionOf(lrp *models.ActualLRP) convergence.RowVersion {
	return convergence.RowVersion{
		Key:               models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence},
		State:             lrp.State,
		ModificationIndex: int64(lrp.GetModificationTag().GetIndex()),
	}
}

// changed is lrp after a write that applied: what change does, and the
// modification index one on.
func changed(lrp *models.ActualLRP, change func(*models.ActualLRP)) *models.ActualLRP {
	after := proto.Clone(lrp).(*models.ActualLRP)
	change(after)
	after.ModificationTag.Index++
	return after
}

var _ = forEachDialect("ApplyConvergence", func(b *board) {
	var events *recordedEvents
	var store *sqldb.SQLDB
	var now int64
	var crashed, claimed, running, suspect, unclaimed, placed *models.ActualLRP

	BeforeEach(func() {
		events = &recordedEvents{}
		store = newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(events))
		now = b.clock.Now().UnixNano()
		tag := func(index uint32) *models.ModificationTag {
			return &models.ModificationTag{Epoch: fmt.Sprintf("epoch-%d", index), Index: index}
		}
		crashed = &models.ActualLRP{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, Domain: "apps", InstanceGuid: "ig-0",
			CellId: "cell-a", DefinitionId: "v1", State: models.ActualLRP_CRASHED, NetInfo: &models.NetInfo{Address: "10.0.0.1"},
			CrashCount: 2, CrashReason: "exit status 1", Since: 100, ModificationTag: tag(4),
		}
		claimed = &models.ActualLRP{
			ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_ORDINARY, Domain: "apps", InstanceGuid: "ig-1",
			CellId: "cell-a", DefinitionId: "v1", State: models.ActualLRP_CLAIMED, Since: 101, Occupied: true, ModificationTag: tag(2),
		}
		running = &models.ActualLRP{
			ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_ORDINARY, Domain: "apps", InstanceGuid: "ig-2",
			CellId: "cell-b", DefinitionId: "v1", State: models.ActualLRP_RUNNING,
			NetInfo: &models.NetInfo{Address: "10.0.0.2", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61002}}},
			Since:   102, Routable: true, ModificationTag: tag(7),
		}
		suspect = &models.ActualLRP{
			ProcessGuid: "web", Index: 3, Presence: models.ActualLRP_SUSPECT, Domain: "apps", InstanceGuid: "ig-3",
			CellId: "cell-c", DefinitionId: "v1", State: models.ActualLRP_RUNNING, NetInfo: &models.NetInfo{Address: "10.0.0.3"},
			Since: 103, Routable: true, ModificationTag: tag(5),
		}
		unclaimed = &models.ActualLRP{
			ProcessGuid: "web", Index: 4, Presence: models.ActualLRP_ORDINARY, Domain: "apps", DefinitionId: "v1",
			State: models.ActualLRP_UNCLAIMED, Since: 104, PlacementError: "no room", ModificationTag: tag(1),
		}
		placed = &models.ActualLRP{
			ProcessGuid: "web", Index: 5, Presence: models.ActualLRP_ORDINARY, Domain: "apps", CellId: "cell-a",
			DefinitionId: "v1", State: models.ActualLRP_UNCLAIMED, Since: 105, ModificationTag: tag(3),
		}
		for _, lrp := range []*models.ActualLRP{crashed, claimed, running, suspect, unclaimed, placed} {
			b.putActual(lrp)
		}
	})

	rows := func() []*models.ActualLRP {
		lrps, err := store.ActualLRPs(b.ctx, db.ActualLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		return lrps
	}
	// expectRows compares every stored row with want, in key order.
	expectRows := func(want ...*models.ActualLRP) {
		got := rows()
		Expect(got).To(HaveLen(len(want)))
		for i := range want {
			Expect(got[i]).To(EqualProto(want[i]))
		}
	}
	apply := func(w *convergence.ConvergenceWrites) *convergence.ConvergenceResult {
		result, err := store.ApplyConvergence(b.ctx, w)
		Expect(err).NotTo(HaveOccurred())
		return result
	}
	expectEvents := func(want ...models.Event) {
		got := events.all()
		Expect(got).To(HaveLen(len(want)))
		for i := range want {
			Expect(got[i].Type).To(Equal(want[i].Type), "event %d", i)
			Expect(got[i].Key).To(Equal(want[i].Key), "event %d", i)
			Expect(got[i].Payload).To(EqualProto(want[i].Payload), "event %d", i)
		}
	}

	Describe("each write", func() {
		It("Delete removes the row", func() {
			Expect(apply(&convergence.ConvergenceWrites{Delete: []convergence.RowVersion{versionOf(running)}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			expectRows(crashed, claimed, suspect, unclaimed, placed)
			expectEvents(models.ActualLRPRemoved(running))
		})

		It("Promote makes the SUSPECT row the ORDINARY one, changing nothing else", func() {
			Expect(apply(&convergence.ConvergenceWrites{Promote: []convergence.RowVersion{versionOf(suspect)}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			promoted := changed(suspect, func(l *models.ActualLRP) { l.Presence = models.ActualLRP_ORDINARY })
			expectRows(crashed, claimed, running, promoted, unclaimed, placed)
			expectEvents(models.ActualLRPChanged(suspect, promoted))
		})

		It("MarkSuspect makes the ORDINARY row SUSPECT, changing nothing else", func() {
			Expect(apply(&convergence.ConvergenceWrites{MarkSuspect: []convergence.RowVersion{versionOf(running)}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			marked := changed(running, func(l *models.ActualLRP) { l.Presence = models.ActualLRP_SUSPECT })
			expectRows(crashed, claimed, marked, suspect, unclaimed, placed)
			expectEvents(models.ActualLRPChanged(running, marked))
		})

		It("Create inserts an UNCLAIMED ORDINARY row, placed or with its placement error", func() {
			result := apply(&convergence.ConvergenceWrites{Create: []convergence.NewActualLRP{
				{ProcessGuid: "web", Index: 3, Domain: "apps", DefinitionID: "v2", CellID: "cell-b"},
				{ProcessGuid: "web", Index: 6, Domain: "apps", DefinitionID: "v2", PlacementError: "no present cell has tags [gpu]"},
			}})
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			got := rows()
			Expect(got).To(HaveLen(8))
			replacement, extra := got[3], got[7]
			Expect(replacement.GetModificationTag().GetEpoch()).NotTo(BeEmpty())
			Expect(extra.GetModificationTag().GetEpoch()).NotTo(BeEmpty())
			Expect(replacement).To(EqualProto(&models.ActualLRP{
				ProcessGuid: "web", Index: 3, Presence: models.ActualLRP_ORDINARY, Domain: "apps", CellId: "cell-b",
				DefinitionId: "v2", State: models.ActualLRP_UNCLAIMED, Since: now,
				ModificationTag: &models.ModificationTag{Epoch: replacement.ModificationTag.Epoch},
			}))
			Expect(extra).To(EqualProto(&models.ActualLRP{
				ProcessGuid: "web", Index: 6, Presence: models.ActualLRP_ORDINARY, Domain: "apps", DefinitionId: "v2",
				State: models.ActualLRP_UNCLAIMED, Since: now, PlacementError: "no present cell has tags [gpu]",
				ModificationTag: &models.ModificationTag{Epoch: extra.ModificationTag.Epoch},
			}))
			Expect(got[4]).To(EqualProto(suspect))
			expectEvents(models.ActualLRPCreated(replacement), models.ActualLRPCreated(extra))
		})

		It("Restart makes a CRASHED row UNCLAIMED without cell or instance, keeping its crash count", func() {
			Expect(apply(&convergence.ConvergenceWrites{Restart: []convergence.RowVersion{versionOf(crashed)}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			restarted := changed(crashed, func(l *models.ActualLRP) {
				l.State, l.CellId, l.InstanceGuid, l.NetInfo, l.Since = models.ActualLRP_UNCLAIMED, "", "", nil, now
			})
			Expect(restarted.CrashCount).To(BeEquivalentTo(2))
			expectRows(restarted, claimed, running, suspect, unclaimed, placed)
			expectEvents(models.ActualLRPChanged(crashed, restarted))
		})

		It("Unassign makes a CLAIMED row UNCLAIMED without cell or instance", func() {
			Expect(apply(&convergence.ConvergenceWrites{Unassign: []convergence.RowVersion{versionOf(claimed)}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			unassigned := changed(claimed, func(l *models.ActualLRP) {
				l.State, l.CellId, l.InstanceGuid, l.Occupied, l.Since = models.ActualLRP_UNCLAIMED, "", "", false, now
			})
			expectRows(crashed, unassigned, running, suspect, unclaimed, placed)
			expectEvents(models.ActualLRPChanged(claimed, unassigned))
		})

		It("Unassign takes a stale UNCLAIMED row off its cell", func() {
			Expect(apply(&convergence.ConvergenceWrites{Unassign: []convergence.RowVersion{versionOf(placed)}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			unassigned := changed(placed, func(l *models.ActualLRP) { l.CellId, l.Since = "", now })
			expectRows(crashed, claimed, running, suspect, unclaimed, unassigned)
			expectEvents(models.ActualLRPChanged(placed, unassigned))
		})

		It("Place puts an UNCLAIMED row on a cell, clears its placement error and restarts its clock", func() {
			Expect(apply(&convergence.ConvergenceWrites{Place: []convergence.Placement{{Row: versionOf(unclaimed), CellID: "cell-b"}}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			placedNow := changed(unclaimed, func(l *models.ActualLRP) { l.CellId, l.PlacementError, l.Since = "cell-b", "", now })
			expectRows(crashed, claimed, running, suspect, placedNow, placed)
			expectEvents(models.ActualLRPChanged(unclaimed, placedNow))
		})

		It("PlacementFailed takes an UNCLAIMED row off its cell with the reason, keeping since", func() {
			Expect(apply(&convergence.ConvergenceWrites{PlacementFailed: []convergence.PlacementFailure{{Row: versionOf(placed), Reason: "no cell with 512 MB free memory"}}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			failed := changed(placed, func(l *models.ActualLRP) { l.CellId, l.PlacementError = "", "no cell with 512 MB free memory" })
			expectRows(crashed, claimed, running, suspect, unclaimed, failed)
			expectEvents(models.ActualLRPChanged(placed, failed))
		})
	})

	Describe("a row that changed since the plan saw it", func() {
		// Each write, and how the row it names moved on before it applied.
		type write func() *convergence.ConvergenceWrites
		writes := map[string]write{
			"delete": func() *convergence.ConvergenceWrites {
				return &convergence.ConvergenceWrites{Delete: []convergence.RowVersion{versionOf(running)}}
			},
			"promote": func() *convergence.ConvergenceWrites {
				return &convergence.ConvergenceWrites{Promote: []convergence.RowVersion{versionOf(suspect)}}
			},
			"mark suspect": func() *convergence.ConvergenceWrites {
				return &convergence.ConvergenceWrites{MarkSuspect: []convergence.RowVersion{versionOf(running)}}
			},
			"restart": func() *convergence.ConvergenceWrites {
				return &convergence.ConvergenceWrites{Restart: []convergence.RowVersion{versionOf(crashed)}}
			},
			"unassign": func() *convergence.ConvergenceWrites {
				return &convergence.ConvergenceWrites{Unassign: []convergence.RowVersion{versionOf(claimed)}}
			},
			"place": func() *convergence.ConvergenceWrites {
				return &convergence.ConvergenceWrites{Place: []convergence.Placement{{Row: versionOf(unclaimed), CellID: "cell-b"}}}
			},
			"placement failed": func() *convergence.ConvergenceWrites {
				return &convergence.ConvergenceWrites{PlacementFailed: []convergence.PlacementFailure{{Row: versionOf(placed), Reason: "full"}}}
			},
		}
		rowOf := map[string]func() *models.ActualLRP{
			"delete": func() *models.ActualLRP { return running }, "promote": func() *models.ActualLRP { return suspect },
			"mark suspect": func() *models.ActualLRP { return running }, "restart": func() *models.ActualLRP { return crashed },
			"unassign": func() *models.ActualLRP { return claimed }, "place": func() *models.ActualLRP { return unclaimed },
			"placement failed": func() *models.ActualLRP { return placed },
		}
		keyWhere := "WHERE process_guid = ? AND instance_index = ? AND presence = ?"
		keyArgs := func(l *models.ActualLRP, args ...any) []any {
			return append(args, l.ProcessGuid, l.Index, l.Presence.String())
		}
		moves := map[string]func(l *models.ActualLRP){
			"its state moved on": func(l *models.ActualLRP) {
				next := models.ActualLRP_RUNNING
				if l.State == next {
					next = models.ActualLRP_CRASHED
				}
				b.exec("UPDATE actual_lrps SET state = ? "+keyWhere, keyArgs(l, next.String())...)
			},
			"its modification index moved on": func(l *models.ActualLRP) {
				b.exec("UPDATE actual_lrps SET modification_tag_index = modification_tag_index + 1 "+keyWhere, keyArgs(l)...)
			},
			"it was deleted": func(l *models.ActualLRP) {
				b.exec("DELETE FROM actual_lrps "+keyWhere, keyArgs(l)...)
			},
		}
		for _, name := range slices.Sorted(maps.Keys(writes)) {
			for _, move := range slices.Sorted(maps.Keys(moves)) {
				It(fmt.Sprintf("%s is skipped when %s", name, move), func() {
					moves[move](rowOf[name]())
					before := rows()
					Expect(apply(writes[name]())).To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
					expectRows(before...)
					expectEvents()
				})
			}
		}

		It("Create is skipped when its key is taken", func() {
			Expect(apply(&convergence.ConvergenceWrites{Create: []convergence.NewActualLRP{
				{ProcessGuid: "web", Index: 2, Domain: "apps", DefinitionID: "v2", CellID: "cell-c"},
				{ProcessGuid: "web", Index: 6, Domain: "apps", DefinitionID: "v2"},
			}})).To(Equal(&convergence.ConvergenceResult{Applied: 1, Skipped: 1}))
			got := rows()
			Expect(got).To(HaveLen(7))
			Expect(got[2]).To(EqualProto(running))
			Expect(events.all()).To(HaveLen(1))
			Expect(events.all()[0].Payload.(*models.ActualLRPCreatedEvent).ActualLrp.Index).To(BeEquivalentTo(6))
		})

		It("MarkSuspect is skipped when the instance already has a SUSPECT row", func() {
			b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_SUSPECT, Domain: "apps",
				DefinitionId: "v1", State: models.ActualLRP_RUNNING, ModificationTag: &models.ModificationTag{Epoch: "e"}})
			before := rows()
			Expect(apply(&convergence.ConvergenceWrites{MarkSuspect: []convergence.RowVersion{versionOf(running)}})).
				To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
			expectRows(before...)
			expectEvents()
		})

		It("Promote is skipped when the instance has an ORDINARY row again", func() {
			b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 3, Presence: models.ActualLRP_ORDINARY, Domain: "apps",
				DefinitionId: "v1", State: models.ActualLRP_UNCLAIMED, ModificationTag: &models.ModificationTag{Epoch: "e"}})
			before := rows()
			Expect(apply(&convergence.ConvergenceWrites{Promote: []convergence.RowVersion{versionOf(suspect)}})).
				To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
			expectRows(before...)
			expectEvents()
		})

		It("applies the writes whose rows did not change and skips the others", func() {
			b.exec("UPDATE actual_lrps SET modification_tag_index = 8 "+keyWhere, keyArgs(running)...)
			result := apply(&convergence.ConvergenceWrites{
				Delete:  []convergence.RowVersion{versionOf(running)},
				Restart: []convergence.RowVersion{versionOf(crashed)},
				Place:   []convergence.Placement{{Row: versionOf(unclaimed), CellID: "cell-b"}},
			})
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 2, Skipped: 1}))
			Expect(rows()[2].ModificationTag.Index).To(BeEquivalentTo(8))
			Expect(events.all()).To(HaveLen(2))
		})
	})

	Describe("a row with two writes in one plan", func() {
		It("restarts and places a crashed row, the Place naming the version the Restart leaves", func() {
			restarted := versionOf(crashed)
			restarted.State, restarted.ModificationIndex = models.ActualLRP_UNCLAIMED, restarted.ModificationIndex+1
			result := apply(&convergence.ConvergenceWrites{
				Restart: []convergence.RowVersion{versionOf(crashed)},
				Place:   []convergence.Placement{{Row: restarted, CellID: "cell-b"}},
			})
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			afterRestart := changed(crashed, func(l *models.ActualLRP) {
				l.State, l.CellId, l.InstanceGuid, l.NetInfo, l.Since = models.ActualLRP_UNCLAIMED, "", "", nil, now
			})
			afterPlace := changed(afterRestart, func(l *models.ActualLRP) { l.CellId = "cell-b" })
			expectRows(afterPlace, claimed, running, suspect, unclaimed, placed)
			expectEvents(models.ActualLRPChanged(crashed, afterRestart), models.ActualLRPChanged(afterRestart, afterPlace))
		})

		It("skips both when the first loses its race", func() {
			b.exec("UPDATE actual_lrps SET modification_tag_index = 5 WHERE process_guid = 'web' AND instance_index = 0")
			before := rows()
			restarted := versionOf(crashed)
			restarted.State, restarted.ModificationIndex = models.ActualLRP_UNCLAIMED, restarted.ModificationIndex+1
			result := apply(&convergence.ConvergenceWrites{
				Restart: []convergence.RowVersion{versionOf(crashed)},
				Place:   []convergence.Placement{{Row: restarted, CellID: "cell-b"}},
			})
			Expect(result).To(Equal(&convergence.ConvergenceResult{Skipped: 2}))
			expectRows(before...)
			expectEvents()
		})

		It("applies a row named twice in one group once", func() {
			result := apply(&convergence.ConvergenceWrites{Place: []convergence.Placement{
				{Row: versionOf(unclaimed), CellID: "cell-b"},
				{Row: versionOf(unclaimed), CellID: "cell-c"},
			}})
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 1, Skipped: 1}))
			Expect(rows()[4].CellId).To(Equal("cell-b"))
		})
	})

	It("performs the groups in the documented order and publishes their events in commit order", func() {
		w := &convergence.ConvergenceWrites{
			PlacementFailed: []convergence.PlacementFailure{{Row: versionOf(placed), Reason: "full"}},
			Place:           []convergence.Placement{{Row: versionOf(unclaimed), CellID: "cell-b"}},
			Unassign:        []convergence.RowVersion{versionOf(claimed)},
			Restart:         []convergence.RowVersion{versionOf(crashed)},
			Create:          []convergence.NewActualLRP{{ProcessGuid: "api", Index: 0, Domain: "apps", DefinitionID: "a1", CellID: "cell-a"}},
			MarkSuspect:     []convergence.RowVersion{versionOf(running)},
			Promote:         []convergence.RowVersion{versionOf(suspect)},
			Delete:          []convergence.RowVersion{versionOf(running)},
		}
		// MarkSuspect comes after Delete and finds the row gone.
		Expect(apply(w)).To(Equal(&convergence.ConvergenceResult{Applied: 7, Skipped: 1}))
		var order []string
		for _, e := range events.all() {
			order = append(order, e.Type)
		}
		Expect(order).To(Equal([]string{
			models.EventActualLRPRemoved,                               // delete
			models.EventActualLRPChanged,                               // promote
			models.EventActualLRPCreated,                               // create
			models.EventActualLRPChanged, models.EventActualLRPChanged, // restart, unassign
			models.EventActualLRPChanged, models.EventActualLRPChanged, // place, placement failed
		}))
		Expect(events.all()[3].Payload.(*models.ActualLRPChangedEvent).Before).To(EqualProto(crashed))
		Expect(events.all()[4].Payload.(*models.ActualLRPChangedEvent).Before).To(EqualProto(claimed))
		Expect(events.all()[5].Payload.(*models.ActualLRPChangedEvent).Before).To(EqualProto(unclaimed))
		Expect(events.all()[6].Payload.(*models.ActualLRPChangedEvent).Before).To(EqualProto(placed))
	})

	It("does nothing for an empty plan", func() {
		Expect(apply(&convergence.ConvergenceWrites{})).To(Equal(&convergence.ConvergenceResult{}))
		Expect(apply(nil)).To(Equal(&convergence.ConvergenceResult{}))
		expectEvents()
	})

	It("applies groups larger than one batch, skipping the rows that moved on", func() {
		const n = 2_345
		seed := seeder{conn: b.conn, dialect: b.dialect}
		Expect(seed.actual(b.ctx, n, func(i int) seedActual {
			return seedActual{guid: "big", index: int32(i), domain: "apps", definitionID: "v1", since: 1}
		})).To(Succeed())
		// Every 100th moved on after the plan.
		b.exec("UPDATE actual_lrps SET modification_tag_index = 1 WHERE process_guid = 'big' AND instance_index % 100 = 7")

		w := &convergence.ConvergenceWrites{}
		for i := range n {
			key := models.ActualLRPKey{ProcessGuid: "big", Index: int32(i), Presence: models.ActualLRP_ORDINARY}
			w.Place = append(w.Place, convergence.Placement{
				Row:    convergence.RowVersion{Key: key, State: models.ActualLRP_UNCLAIMED},
				CellID: fmt.Sprintf("cell-%d", i%7),
			})
			w.Create = append(w.Create, convergence.NewActualLRP{ProcessGuid: "new", Index: int32(i), Domain: "apps", DefinitionID: "v1"})
		}
		moved := (n + 92) / 100
		Expect(apply(w)).To(Equal(&convergence.ConvergenceResult{Applied: 2*n - moved, Skipped: moved}))

		Expect(b.count("SELECT COUNT(*) FROM actual_lrps WHERE process_guid = 'new' AND state = 'UNCLAIMED'")).To(Equal(n))
		Expect(b.count("SELECT COUNT(*) FROM actual_lrps WHERE process_guid = 'big' AND cell_id <> '' AND modification_tag_index = 1 AND since = ?", now)).
			To(Equal(n - moved))
		Expect(b.count("SELECT COUNT(*) FROM actual_lrps WHERE process_guid = 'big' AND cell_id = '' AND modification_tag_index = 1 AND since = 1")).
			To(Equal(moved))
		Expect(b.count("SELECT COUNT(*) FROM actual_lrps WHERE process_guid = 'big' AND cell_id = ?", "cell-3")).
			To(Equal(b.count("SELECT COUNT(*) FROM actual_lrps WHERE process_guid = 'big' AND instance_index % 7 = 3 AND instance_index % 100 <> 7")))
		Expect(events.all()).To(HaveLen(2*n - moved))
	})

	Describe("writes that could never be right", func() {
		valid := func() convergence.ConvergenceWrites {
			return convergence.ConvergenceWrites{Delete: []convergence.RowVersion{versionOf(running)}}
		}
		DescribeTable("are refused, naming the field, and nothing is written",
			func(field string, spoil func(w *convergence.ConvergenceWrites)) {
				w := valid()
				spoil(&w)
				before := rows()
				_, err := store.ApplyConvergence(b.ctx, &w)
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
				Expect(err.Error()).To(ContainSubstring(field))
				expectRows(before...)
				expectEvents()
			},
			Entry("a delete without a guid", "writes.delete[1].key.process_guid", func(w *convergence.ConvergenceWrites) {
				w.Delete = append(w.Delete, convergence.RowVersion{Key: models.ActualLRPKey{Presence: models.ActualLRP_ORDINARY}, State: models.ActualLRP_RUNNING})
			}),
			Entry("an unknown presence", "writes.delete[1].key.presence", func(w *convergence.ConvergenceWrites) {
				w.Delete = append(w.Delete, convergence.RowVersion{Key: models.ActualLRPKey{ProcessGuid: "web", Presence: 9}, State: models.ActualLRP_RUNNING})
			}),
			Entry("a promotion of an ORDINARY row", "writes.promote[0].key.presence", func(w *convergence.ConvergenceWrites) {
				w.Promote = []convergence.RowVersion{versionOf(running)}
			}),
			Entry("a suspicion of a SUSPECT row", "writes.mark_suspect[0].key.presence", func(w *convergence.ConvergenceWrites) {
				w.MarkSuspect = []convergence.RowVersion{versionOf(suspect)}
			}),
			Entry("a create without a definition", "writes.create[0].definition_id", func(w *convergence.ConvergenceWrites) {
				w.Create = []convergence.NewActualLRP{{ProcessGuid: "web", Index: 9, Domain: "apps"}}
			}),
			Entry("a create with a negative index", "writes.create[0].index", func(w *convergence.ConvergenceWrites) {
				w.Create = []convergence.NewActualLRP{{ProcessGuid: "web", Index: -1, Domain: "apps", DefinitionID: "v1"}}
			}),
			Entry("a create both placed and failed", "writes.create[0].placement_error", func(w *convergence.ConvergenceWrites) {
				w.Create = []convergence.NewActualLRP{{ProcessGuid: "web", Index: 9, Domain: "apps", DefinitionID: "v1", CellID: "c", PlacementError: "full"}}
			}),
			Entry("a restart of a row that is not CRASHED", "writes.restart[0].state", func(w *convergence.ConvergenceWrites) {
				w.Restart = []convergence.RowVersion{versionOf(running)}
			}),
			Entry("an unassignment of a RUNNING row", "writes.unassign[0].state", func(w *convergence.ConvergenceWrites) {
				w.Unassign = []convergence.RowVersion{versionOf(running)}
			}),
			Entry("a placement without a cell", "writes.place[0].cell_id", func(w *convergence.ConvergenceWrites) {
				w.Place = []convergence.Placement{{Row: versionOf(unclaimed)}}
			}),
			Entry("a placement of a CLAIMED row", "writes.place[0].row.state", func(w *convergence.ConvergenceWrites) {
				w.Place = []convergence.Placement{{Row: versionOf(claimed), CellID: "cell-b"}}
			}),
			Entry("a placement failure without a reason", "writes.placement_failed[0].reason", func(w *convergence.ConvergenceWrites) {
				w.PlacementFailed = []convergence.PlacementFailure{{Row: versionOf(unclaimed)}}
			}),
		)
	})
})
