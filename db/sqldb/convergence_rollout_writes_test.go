package sqldb_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// take returns the events recorded so far and forgets them.
func (r *recordedEvents) take() []models.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// The write groups of rolling updates: Retire, RequestStop, Redefine (row
// writes, like the others in convergence_apply_test.go), Rollouts and
// DeleteDefinitions.
var _ = forEachDialect("ApplyConvergence of rolling updates", func(b *board) {
	var events *recordedEvents
	var store *sqldb.SQLDB
	var now int64
	var serving, retiring, crashed, unroutable, successor *models.ActualLRP

	BeforeEach(func() {
		events = &recordedEvents{}
		store = newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(events))
		now = b.clock.Now().UnixNano()
		tag := func(index uint32) *models.ModificationTag {
			return &models.ModificationTag{Epoch: fmt.Sprintf("epoch-%d", index), Index: index}
		}
		// web runs v1 and rolls to v2.
		serving = &models.ActualLRP{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, Domain: "apps", InstanceGuid: "ig-0",
			CellId: "cell-a", DefinitionId: "v1", State: models.ActualLRP_RUNNING,
			NetInfo: &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000}}},
			Since:   100, Routable: true, Occupied: true, ModificationTag: tag(6),
		}
		retiring = &models.ActualLRP{
			ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_RETIRING, Domain: "apps", InstanceGuid: "ig-1",
			CellId: "cell-b", DefinitionId: "v1", State: models.ActualLRP_RUNNING, NetInfo: &models.NetInfo{Address: "10.0.0.2"},
			Since: 101, Routable: true, ModificationTag: tag(3),
		}
		successor = &models.ActualLRP{
			ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_ORDINARY, Domain: "apps", InstanceGuid: "ig-1b",
			CellId: "cell-a", DefinitionId: "v2", State: models.ActualLRP_RUNNING, NetInfo: &models.NetInfo{Address: "10.0.0.1"},
			Since: 102, Routable: true, ModificationTag: tag(2),
		}
		crashed = &models.ActualLRP{
			ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_ORDINARY, Domain: "apps",
			DefinitionId: "v1", State: models.ActualLRP_CRASHED, CrashCount: 4, CrashReason: "exit status 2",
			Since: 103, ModificationTag: tag(9),
		}
		unroutable = &models.ActualLRP{
			ProcessGuid: "web", Index: 3, Presence: models.ActualLRP_ORDINARY, Domain: "apps", InstanceGuid: "ig-3",
			CellId: "cell-b", DefinitionId: "v1", State: models.ActualLRP_RUNNING, NetInfo: &models.NetInfo{Address: "10.0.0.2"},
			Since: 104, ModificationTag: tag(1),
		}
		for _, lrp := range []*models.ActualLRP{serving, retiring, successor, crashed, unroutable} {
			b.putActual(lrp)
		}
	})

	rows := func() []*models.ActualLRP {
		GinkgoHelper()
		lrps, err := store.ActualLRPs(b.ctx, db.ActualLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		return lrps
	}
	expectRows := func(want ...*models.ActualLRP) {
		GinkgoHelper()
		got := rows()
		Expect(got).To(HaveLen(len(want)))
		for i := range want {
			Expect(got[i]).To(EqualProto(want[i]), "row %d", i)
		}
	}
	apply := func(w *convergence.ConvergenceWrites) *convergence.ConvergenceResult {
		GinkgoHelper()
		result, err := store.ApplyConvergence(b.ctx, w)
		Expect(err).NotTo(HaveOccurred())
		return result
	}
	expectEvents := func(want ...models.Event) {
		GinkgoHelper()
		got := events.all()
		Expect(got).To(HaveLen(len(want)))
		for i := range want {
			Expect(got[i].Type).To(Equal(want[i].Type), "event %d", i)
			Expect(got[i].Key).To(Equal(want[i].Key), "event %d", i)
			Expect(got[i].Payload).To(EqualProto(want[i].Payload), "event %d", i)
		}
	}

	Describe("row writes", func() {
		It("Retire makes a serving ORDINARY row the RETIRING one, still serving, and frees the key for its successor", func() {
			result := apply(&convergence.ConvergenceWrites{
				Retire: []convergence.Retirement{{Row: versionOf(serving)}},
				Create: []convergence.NewActualLRP{{ProcessGuid: "web", Index: 0, Domain: "apps", DefinitionID: "v2", CellID: "cell-b"}},
			})
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			retired := changed(serving, func(l *models.ActualLRP) { l.Presence, l.Since = models.ActualLRP_RETIRING, now })
			got := rows()
			Expect(got).To(HaveLen(6))
			Expect(got[0].DefinitionId).To(Equal("v2"))
			Expect(got[0].State).To(Equal(models.ActualLRP_UNCLAIMED))
			Expect(got[1]).To(EqualProto(retired))
			Expect(got[1].StopRequested).To(BeFalse())
			Expect(events.all()).To(HaveLen(2))
			expectEvent(events.all()[0], models.EventActualLRPChanged, "web", &models.ActualLRPChangedEvent{Before: serving, After: retired})
			Expect(events.all()[1].Type).To(Equal(models.EventActualLRPCreated))
		})

		It("Retire with Stop tells the rep to stop the instance at once", func() {
			Expect(apply(&convergence.ConvergenceWrites{Retire: []convergence.Retirement{{Row: versionOf(serving), Stop: true}}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			retired := changed(serving, func(l *models.ActualLRP) {
				l.Presence, l.Since, l.StopRequested = models.ActualLRP_RETIRING, now, true
			})
			expectRows(retired, successor, retiring, crashed, unroutable)
			expectEvents(models.ActualLRPChanged(serving, retired))
		})

		It("RequestStop tells the rep of a RETIRING row to drain it, restarting its clock", func() {
			Expect(apply(&convergence.ConvergenceWrites{RequestStop: []convergence.RowVersion{versionOf(retiring)}})).
				To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			stopping := changed(retiring, func(l *models.ActualLRP) { l.StopRequested, l.Since = true, now })
			expectRows(serving, successor, stopping, crashed, unroutable)
			expectEvents(models.ActualLRPChanged(retiring, stopping))
		})

		It("Redefine puts a row that serves nothing on the active definition, UNCLAIMED and fresh", func() {
			Expect(apply(&convergence.ConvergenceWrites{Redefine: []convergence.Redefinition{
				{Row: versionOf(crashed), DefinitionID: "v2"},
				{Row: versionOf(unroutable), DefinitionID: "v2"},
			}})).To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			fresh := func(l *models.ActualLRP) {
				l.DefinitionId, l.State = "v2", models.ActualLRP_UNCLAIMED
				l.CellId, l.InstanceGuid, l.NetInfo = "", "", nil
				l.CrashCount, l.CrashReason, l.PlacementError = 0, "", ""
				l.Routable, l.Occupied, l.Since = false, false, now
			}
			redefinedCrash, redefinedUnroutable := changed(crashed, fresh), changed(unroutable, fresh)
			expectRows(serving, successor, retiring, redefinedCrash, redefinedUnroutable)
			expectEvents(models.ActualLRPChanged(crashed, redefinedCrash), models.ActualLRPChanged(unroutable, redefinedUnroutable))
		})

		It("Redefine and a Place chained after it, naming the version Redefine leaves, both apply", func() {
			redefined := versionOf(crashed)
			redefined.State, redefined.ModificationIndex = models.ActualLRP_UNCLAIMED, redefined.ModificationIndex+1
			result := apply(&convergence.ConvergenceWrites{
				Redefine: []convergence.Redefinition{{Row: versionOf(crashed), DefinitionID: "v2"}},
				Place:    []convergence.Placement{{Row: redefined, CellID: "cell-b"}},
			})
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			got := rows()[3]
			Expect(got.DefinitionId).To(Equal("v2"))
			Expect(got.CellId).To(Equal("cell-b"))
			Expect(got.State).To(Equal(models.ActualLRP_UNCLAIMED))
			Expect(got.ModificationTag.Index).To(Equal(crashed.ModificationTag.Index + 2))
		})

		It("Retire is skipped when the index has a RETIRING row already", func() {
			before := rows()
			Expect(apply(&convergence.ConvergenceWrites{Retire: []convergence.Retirement{{Row: versionOf(successor)}}})).
				To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
			expectRows(before...)
			expectEvents()
		})

		Describe("a row that changed since the plan saw it", func() {
			writes := map[string]func() *convergence.ConvergenceWrites{
				"retire": func() *convergence.ConvergenceWrites {
					return &convergence.ConvergenceWrites{Retire: []convergence.Retirement{{Row: versionOf(serving), Stop: true}}}
				},
				"request stop": func() *convergence.ConvergenceWrites {
					return &convergence.ConvergenceWrites{RequestStop: []convergence.RowVersion{versionOf(retiring)}}
				},
				"redefine": func() *convergence.ConvergenceWrites {
					return &convergence.ConvergenceWrites{Redefine: []convergence.Redefinition{{Row: versionOf(crashed), DefinitionID: "v2"}}}
				},
			}
			rowOf := map[string]func() *models.ActualLRP{
				"retire":       func() *models.ActualLRP { return serving },
				"request stop": func() *models.ActualLRP { return retiring },
				"redefine":     func() *models.ActualLRP { return crashed },
			}
			keyWhere := "WHERE process_guid = ? AND instance_index = ? AND presence = ?"
			keyArgs := func(l *models.ActualLRP, args ...any) []any {
				return append(args, l.ProcessGuid, l.Index, l.Presence.String())
			}
			moves := map[string]func(l *models.ActualLRP){
				"its state moved on": func(l *models.ActualLRP) {
					b.exec("UPDATE actual_lrps SET state = 'CLAIMED' "+keyWhere, keyArgs(l)...)
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
		})
	})

	Describe("rollout records", func() {
		var desired *models.DesiredLRP

		BeforeEach(func() {
			// The LRP as an update to v2 leaves it: active v2, a record
			// PROGRESSING at modification index 1.
			var err error
			desired, err = store.DesireLRP(b.ctx, newLRP("api", "apps", 0))
			Expect(err).NotTo(HaveOccurred())
			desired, err = store.UpdateDesiredLRP(b.ctx, "api", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/api-2"), UpdateIdentifier: "v2",
			})
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(time.Second)
			now = b.clock.Now().UnixNano()
			events.take()
		})

		snapshotRollouts := func() []convergence.RolloutRow {
			GinkgoHelper()
			snap, err := store.ConvergenceSnapshot(b.ctx, []string{"api"})
			Expect(err).NotTo(HaveOccurred())
			return snap.Rollouts
		}
		get := func() *models.DesiredLRP {
			GinkgoHelper()
			lrp, err := store.DesiredLRPByProcessGuid(b.ctx, "api")
			Expect(err).NotTo(HaveOccurred())
			return lrp
		}
		progressed := convergence.RolloutRow{State: models.RolloutStatus_PROGRESSING, Reason: "rolling from v1 to v2",
			DefinitionID: "v2", StartedAt: 1, ProgressAt: 2, UpdatedInstances: 1, InFlight: 1}

		It("stores the record compare-and-set on its modification index and announces the status", func() {
			Expect(apply(&convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "api", ExpectModificationIndex: 1, ExpectActiveDefinitionID: "v2", Record: progressed,
			}}})).To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			want := progressed
			want.ProcessGuid, want.ModificationIndex = "api", 2
			Expect(snapshotRollouts()).To(Equal([]convergence.RolloutRow{want}))

			status, err := store.RolloutStatus(b.ctx, "api")
			Expect(err).NotTo(HaveOccurred())
			Expect(status.UpdatedInstances).To(BeEquivalentTo(1))
			Expect(status.ProgressAt).To(BeEquivalentTo(2))
			Expect(status.DeadlineAt).To(Equal(int64(2 + 10*time.Minute)))
			Expect(events.all()).To(HaveLen(1))
			expectEvent(events.all()[0], models.EventRolloutChanged, "api", &models.RolloutChangedEvent{Status: status})
		})

		It("inserts a record where there is none when expecting modification index 0", func() {
			b.exec("DELETE FROM rollouts")
			Expect(apply(&convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "api", ExpectActiveDefinitionID: "v2", Record: progressed,
			}}})).To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			Expect(snapshotRollouts()).To(HaveLen(1))
			Expect(snapshotRollouts()[0].ModificationIndex).To(BeEquivalentTo(1))
		})

		DescribeTable("skips a write whose record or LRP moved on, writing and announcing nothing",
			func(w convergence.RolloutWrite) {
				before := snapshotRollouts()
				Expect(apply(&convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{w}})).To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
				Expect(snapshotRollouts()).To(Equal(before))
				Expect(get()).To(EqualProto(desired))
				expectEvents()
			},
			Entry("an older modification index", convergence.RolloutWrite{ProcessGuid: "api", ExpectModificationIndex: 0,
				ExpectActiveDefinitionID: "v2", Record: convergence.RolloutRow{State: models.RolloutStatus_COMPLETE}}),
			Entry("a newer modification index", convergence.RolloutWrite{ProcessGuid: "api", ExpectModificationIndex: 2,
				ExpectActiveDefinitionID: "v2", Record: convergence.RolloutRow{State: models.RolloutStatus_COMPLETE}}),
			Entry("another active definition", convergence.RolloutWrite{ProcessGuid: "api", ExpectModificationIndex: 1,
				ExpectActiveDefinitionID: "v1", Record: convergence.RolloutRow{State: models.RolloutStatus_COMPLETE},
				SetHealthyDefinitionID: "v1"}),
			Entry("an LRP believed gone that is desired", convergence.RolloutWrite{ProcessGuid: "api", ExpectModificationIndex: 1,
				Delete: true}),
			Entry("an LRP that has no record", convergence.RolloutWrite{ProcessGuid: "nope", ExpectModificationIndex: 1,
				Record: convergence.RolloutRow{State: models.RolloutStatus_NONE}}),
		)

		It("moves the healthy definition when a rollout completes, leaving the LRP's modification tag alone", func() {
			complete := convergence.RolloutRow{State: models.RolloutStatus_COMPLETE, DefinitionID: "v2", StartedAt: 1, ProgressAt: 2, FinishedAt: now}
			Expect(apply(&convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "api", ExpectModificationIndex: 1, ExpectActiveDefinitionID: "v2", Record: complete,
				Settled: true, SetHealthyDefinitionID: "v2",
			}}})).To(Equal(&convergence.ConvergenceResult{Applied: 1}))

			after := get()
			Expect(after.HealthyDefinitionId).To(Equal("v2"))
			Expect(after.ModificationTag).To(EqualProto(desired.ModificationTag))
			Expect(snapshotRollouts()).To(BeEmpty(), "settled")

			status, err := store.RolloutStatus(b.ctx, "api")
			Expect(err).NotTo(HaveOccurred())
			Expect(status.State).To(Equal(models.RolloutStatus_COMPLETE))
			Expect(status.HealthyDefinitionId).To(Equal("v2"))
			Expect(status.DeadlineAt).To(BeZero())
			expectEvents(models.DesiredLRPChanged(desired, after), models.RolloutChanged(status))
		})

		It("re-activates the healthy definition on auto-revert, moving the LRP's modification tag on", func() {
			b.exec("UPDATE desired_lrps SET healthy_definition_id = 'v1'")
			desired = get()
			reverted := convergence.RolloutRow{State: models.RolloutStatus_REVERTED, Reason: "no index completed", DefinitionID: "v1",
				FailedDefinitionID: "v2", StartedAt: now, ProgressAt: now}
			Expect(apply(&convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "api", ExpectModificationIndex: 1, ExpectActiveDefinitionID: "v2", Record: reverted,
				SetActiveDefinitionID: "v1",
			}}})).To(Equal(&convergence.ConvergenceResult{Applied: 1}))

			after := get()
			Expect(after.ActiveDefinitionId).To(Equal("v1"))
			Expect(after.ModificationTag.Index).To(Equal(desired.ModificationTag.Index + 1))
			status, err := store.RolloutStatus(b.ctx, "api")
			Expect(err).NotTo(HaveOccurred())
			Expect(status.State).To(Equal(models.RolloutStatus_REVERTED))
			Expect(status.FailedDefinitionId).To(Equal("v2"))
			Expect(status.DeadlineAt).To(Equal(now+int64(10*time.Minute)), "a revert still moving has a deadline")
			got := events.all()
			Expect(eventTypes(got)).To(Equal([]string{models.EventDesiredLRPChanged, models.EventRolloutChanged}))
			expectEvent(got[0], models.EventDesiredLRPChanged, "api", &models.DesiredLRPChangedEvent{
				Before: withoutDefinition(desired), After: withoutDefinition(after)})
		})

		It("deletes the record of an LRP that is gone, announcing it as NONE", func() {
			Expect(store.RemoveDesiredLRP(b.ctx, "api")).To(Succeed())
			events.take()
			Expect(snapshotRollouts()).To(HaveLen(1))
			index := snapshotRollouts()[0].ModificationIndex

			Expect(apply(&convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "api", ExpectModificationIndex: index, Delete: true,
			}}})).To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			Expect(snapshotRollouts()).To(BeEmpty())
			Expect(b.count("SELECT COUNT(*) FROM rollouts")).To(BeZero())
			expectEvents(models.RolloutChanged(&models.RolloutStatus{ProcessGuid: "api"}))
		})

		It("applies the writes whose record did not move and skips the others", func() {
			_, err := store.DesireLRP(b.ctx, newLRP("db", "apps", 0))
			Expect(err).NotTo(HaveOccurred())
			events.take()
			Expect(apply(&convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{
				{ProcessGuid: "api", ExpectModificationIndex: 7, ExpectActiveDefinitionID: "v2", Record: progressed},
				{ProcessGuid: "db", ExpectActiveDefinitionID: "v1", Record: convergence.RolloutRow{State: models.RolloutStatus_COMPLETE}, Settled: true},
				{ProcessGuid: "api", ExpectModificationIndex: 1, ExpectActiveDefinitionID: "v2", Record: progressed},
			}})).To(Equal(&convergence.ConvergenceResult{Applied: 2, Skipped: 1}))
			Expect(eventTypes(events.all())).To(Equal([]string{models.EventRolloutChanged, models.EventRolloutChanged}))
		})
	})

	Describe("definition cleanup", func() {
		BeforeEach(func() {
			// web: v4 active, v3 healthy, v1 run by rows, v2 and v0 not
			// referenced at all.
			_, err := store.DesireLRP(b.ctx, newLRP("web", "apps", 0))
			Expect(err).NotTo(HaveOccurred())
			for _, id := range []string{"v0", "v2", "v3", "v4"} {
				_, err := store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
					Definition: newDefinition("", "/bin/web-"+id), UpdateIdentifier: id,
				})
				Expect(err).NotTo(HaveOccurred())
			}
			b.exec("UPDATE desired_lrps SET healthy_definition_id = 'v3'")
			b.exec("DELETE FROM actual_lrps WHERE definition_id <> 'v1'")
			events.take()
		})
		definitionIDs := func(guid string) []string {
			GinkgoHelper()
			summaries, err := store.Definitions(b.ctx, guid)
			if models.IsErrorType(err, models.Error_ResourceNotFound) {
				return nil
			}
			Expect(err).NotTo(HaveOccurred())
			var ids []string
			for _, s := range summaries {
				ids = append(ids, s.DefinitionId)
			}
			return ids
		}
		refs := func(guid string, ids ...string) []convergence.DefinitionRef {
			var out []convergence.DefinitionRef
			for _, id := range ids {
				out = append(out, convergence.DefinitionRef{ProcessGuid: guid, DefinitionID: id})
			}
			return out
		}

		It("deletes definitions nothing references", func() {
			Expect(apply(&convergence.ConvergenceWrites{DeleteDefinitions: refs("web", "v2", "v0")})).
				To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			Expect(definitionIDs("web")).To(Equal([]string{"v4", "v3", "v1"}))
			expectEvents()
		})

		It("refuses, as a guard, the active, the healthy and a referenced definition, and one that is not stored", func() {
			Expect(apply(&convergence.ConvergenceWrites{DeleteDefinitions: refs("web", "v4", "v3", "v1", "v9")})).
				To(Equal(&convergence.ConvergenceResult{Skipped: 4}))
			Expect(definitionIDs("web")).To(Equal([]string{"v4", "v3", "v2", "v1", "v0"}))
		})

		It("keeps a definition a RETIRING row still runs, and deletes a gone LRP's last ones once nothing runs them", func() {
			b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_RETIRING, Domain: "apps",
				InstanceGuid: "ig", CellId: "cell-a", DefinitionId: "v2", State: models.ActualLRP_RUNNING,
				ModificationTag: &models.ModificationTag{Epoch: "e"}})
			Expect(apply(&convergence.ConvergenceWrites{DeleteDefinitions: refs("web", "v2")})).To(Equal(&convergence.ConvergenceResult{Skipped: 1}))

			Expect(store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			Expect(apply(&convergence.ConvergenceWrites{DeleteDefinitions: refs("web", "v4", "v3", "v2", "v0")})).
				To(Equal(&convergence.ConvergenceResult{Applied: 3, Skipped: 1}), "v2 is still run")
			Expect(definitionIDs("web")).To(Equal([]string{"v2", "v1"}))
		})

		It("runs after the row writes of the same plan", func() {
			// The RETIRING row of v0 is deleted first, then v0.
			b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_RETIRING, Domain: "apps",
				DefinitionId: "v0", State: models.ActualLRP_RUNNING, ModificationTag: &models.ModificationTag{Epoch: "e", Index: 4}})
			Expect(apply(&convergence.ConvergenceWrites{
				DeleteDefinitions: refs("web", "v0"),
				Delete: []convergence.RowVersion{{Key: models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_RETIRING},
					State: models.ActualLRP_RUNNING, ModificationIndex: 4}},
			})).To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			Expect(definitionIDs("web")).To(Equal([]string{"v4", "v3", "v2", "v1"}))
		})
	})

	It("performs the new groups in the documented order", func() {
		redefined := versionOf(crashed)
		redefined.State, redefined.ModificationIndex = models.ActualLRP_UNCLAIMED, redefined.ModificationIndex+1
		w := &convergence.ConvergenceWrites{
			Place:       []convergence.Placement{{Row: redefined, CellID: "cell-a"}},
			Redefine:    []convergence.Redefinition{{Row: versionOf(crashed), DefinitionID: "v2"}},
			Create:      []convergence.NewActualLRP{{ProcessGuid: "web", Index: 0, Domain: "apps", DefinitionID: "v2"}},
			RequestStop: []convergence.RowVersion{versionOf(retiring)},
			Retire:      []convergence.Retirement{{Row: versionOf(serving)}},
			Delete:      []convergence.RowVersion{versionOf(unroutable)},
		}
		Expect(apply(w)).To(Equal(&convergence.ConvergenceResult{Applied: 6}))
		var order []string
		for _, e := range events.all() {
			order = append(order, e.Type)
		}
		Expect(order).To(Equal([]string{
			models.EventActualLRPRemoved,                               // delete
			models.EventActualLRPChanged, models.EventActualLRPChanged, // retire, request stop
			models.EventActualLRPCreated,                               // create, on the key retire freed
			models.EventActualLRPChanged, models.EventActualLRPChanged, // redefine, place
		}))
	})

	Describe("writes that could never be right", func() {
		DescribeTable("are refused, naming the field, and nothing is written",
			func(field string, spoil func(w *convergence.ConvergenceWrites)) {
				w := convergence.ConvergenceWrites{RequestStop: []convergence.RowVersion{versionOf(retiring)}}
				spoil(&w)
				before := rows()
				_, err := store.ApplyConvergence(b.ctx, &w)
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
				Expect(err.Error()).To(ContainSubstring(field))
				expectRows(before...)
				expectEvents()
			},
			Entry("a retirement of a RETIRING row", "writes.retire[0].row.key.presence", func(w *convergence.ConvergenceWrites) {
				w.Retire = []convergence.Retirement{{Row: versionOf(retiring)}}
			}),
			Entry("a retirement of a CRASHED row", "writes.retire[0].row.state", func(w *convergence.ConvergenceWrites) {
				w.Retire = []convergence.Retirement{{Row: versionOf(crashed)}}
			}),
			Entry("a stop request for an ORDINARY row", "writes.request_stop[1].key.presence", func(w *convergence.ConvergenceWrites) {
				w.RequestStop = append(w.RequestStop, versionOf(serving))
			}),
			Entry("a redefinition of a RETIRING row", "writes.redefine[0].row.key.presence", func(w *convergence.ConvergenceWrites) {
				w.Redefine = []convergence.Redefinition{{Row: versionOf(retiring), DefinitionID: "v2"}}
			}),
			Entry("a redefinition without a definition", "writes.redefine[0].definition_id", func(w *convergence.ConvergenceWrites) {
				w.Redefine = []convergence.Redefinition{{Row: versionOf(crashed)}}
			}),
			Entry("a rollout write without a guid", "writes.rollouts[0].process_guid", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ExpectActiveDefinitionID: "v2"}}
			}),
			Entry("a rollout write with a negative index", "writes.rollouts[0].expect_modification_index", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ProcessGuid: "web", ExpectModificationIndex: -1}}
			}),
			Entry("a record of another LRP", "writes.rollouts[0].record.process_guid", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ProcessGuid: "web", ExpectActiveDefinitionID: "v2", Record: convergence.RolloutRow{ProcessGuid: "api"}}}
			}),
			Entry("a record in an unknown state", "writes.rollouts[0].record.state", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ProcessGuid: "web", ExpectActiveDefinitionID: "v2", Record: convergence.RolloutRow{State: 42}}}
			}),
			Entry("a record counting negative instances", "writes.rollouts[0].record.in_flight", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ProcessGuid: "web", ExpectActiveDefinitionID: "v2", Record: convergence.RolloutRow{InFlight: -1}}}
			}),
			Entry("a definition moved on an LRP that is gone", "writes.rollouts[0].set_active_definition_id", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ProcessGuid: "web", ExpectModificationIndex: 1, SetActiveDefinitionID: "v1"}}
			}),
			Entry("a delete of no record", "writes.rollouts[0].expect_modification_index", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ProcessGuid: "web", Delete: true}}
			}),
			Entry("a delete of a desired LRP's record", "writes.rollouts[0].delete", func(w *convergence.ConvergenceWrites) {
				w.Rollouts = []convergence.RolloutWrite{{ProcessGuid: "web", ExpectModificationIndex: 1, ExpectActiveDefinitionID: "v2", Delete: true}}
			}),
			Entry("a definition delete without a definition", "writes.delete_definitions[0].definition_id", func(w *convergence.ConvergenceWrites) {
				w.DeleteDefinitions = []convergence.DefinitionRef{{ProcessGuid: "web"}}
			}),
			Entry("a definition delete without a guid", "writes.delete_definitions[0].process_guid", func(w *convergence.ConvergenceWrites) {
				w.DeleteDefinitions = []convergence.DefinitionRef{{DefinitionID: "v1"}}
			}),
		)
	})
})
