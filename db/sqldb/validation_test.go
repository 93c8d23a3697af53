package sqldb_test

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// An update with validate (db.OperationDB, convergence/validation.go):
// the store records a VALIDATE operation and changes nothing else; the
// validation instance is never routable; convergence's Start applies the
// update once validated.
var _ = forEachDialect("validated updates", func(b *board) {
	update := func(u *models.DesiredLRPUpdate) *models.Operation {
		GinkgoHelper()
		note := &db.OperationNote{}
		_, err := b.store.UpdateDesiredLRP(db.WithOperationNote(b.ctx, note), "web", u)
		Expect(err).NotTo(HaveOccurred())
		return note.Operation
	}
	validated := func(id string) *models.DesiredLRPUpdate {
		return &models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/web-"+id), UpdateIdentifier: id,
			Validate: true, Instances: int32p(3)}
	}
	operation := func(id string) *models.Operation {
		GinkgoHelper()
		op, err := b.store.Operation(b.ctx, id)
		Expect(err).NotTo(HaveOccurred())
		return op
	}
	start := func(op *models.Operation) {
		GinkgoHelper()
		result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Operations: []convergence.OperationWrite{{
			ID: op.Id, ProcessGuid: "web", ExpectModificationIndex: operationVersion(b, op.Id), Start: true,
			History: []string{"validated: an instance of v2 became healthy on cell cell-1"},
		}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
	}
	messages := func(op *models.Operation) []string {
		var lines []string
		for _, e := range op.History {
			lines = append(lines, e.Message)
		}
		return lines
	}

	BeforeEach(func() {
		_, err := b.store.AcquireLease(b.ctx, "convergence", "board-1", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(time.Second)
	})

	It("records VALIDATE, IN_PROGRESS, stores the definition and changes nothing else", func() {
		before := operationLRP(b)
		op := update(validated("v2"))
		Expect(op.Kind).To(Equal(models.Operation_VALIDATE))
		Expect(op.Status).To(Equal(models.Operation_IN_PROGRESS))
		Expect(op.DefinitionId).To(Equal("v2"))
		Expect(op.LeaseOwner).To(Equal("board-1"))
		Expect(messages(op)).To(Equal([]string{"definition v2 stored; validating v2 with one unroutable instance before it becomes active"}))

		after := operationLRP(b)
		Expect(after.ActiveDefinitionId).To(Equal(before.ActiveDefinitionId))
		Expect(after.Instances).To(Equal(before.Instances), "the rest of the update waits too")
		Expect(after.ModificationTag).To(EqualProto(before.ModificationTag))
		defs, err := b.store.Definitions(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(defs).To(HaveLen(2))
		st, err := b.store.RolloutStatus(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.State).To(Equal(models.RolloutStatus_NONE))
	})

	It("applies the update once convergence starts it again, keeping when it started", func() {
		op := update(validated("v2"))
		b.clock.Advance(3 * time.Second)
		start(op)

		after := operationLRP(b)
		Expect(after.ActiveDefinitionId).To(Equal("v2"))
		Expect(after.Instances).To(BeEquivalentTo(3))
		st, err := b.store.RolloutStatus(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
		Expect(st.OperationId).To(Equal(op.Id))

		started := operation(op.Id)
		Expect(started.Status).To(Equal(models.Operation_IN_PROGRESS))
		Expect(started.StartedAt).To(Equal(op.StartedAt), "it started with its validation")
		lines := messages(started)
		Expect(lines).To(HaveLen(3))
		Expect(lines[1]).To(Equal("validated: an instance of v2 became healthy on cell cell-1"))
		Expect(lines[2]).To(HavePrefix("applied: definition v2 activated"))
	})

	It("waits PENDING behind a change in progress, then starts its validation, and only then applies", func() {
		inProgress := update(&models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/web-v2"), UpdateIdentifier: "v2"})
		op := update(validated("v3"))
		Expect(op.Kind).To(Equal(models.Operation_VALIDATE))
		Expect(op.Status).To(Equal(models.Operation_PENDING))
		Expect(operation(inProgress.Id).Status).To(Equal(models.Operation_IN_PROGRESS), "it supersedes nothing")

		_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Operations: []convergence.OperationWrite{{
			ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: operationVersion(b, inProgress.Id),
			Status: models.Operation_FINISHED, Reason: "every index runs v2",
		}}})
		Expect(err).NotTo(HaveOccurred())
		start(op) // its turn
		validating := operation(op.Id)
		Expect(validating.Status).To(Equal(models.Operation_IN_PROGRESS))
		Expect(messages(validating)).To(ContainElement("started: validating v3 with one unroutable instance before it becomes active"))
		Expect(operationLRP(b).ActiveDefinitionId).To(Equal("v2"), "nothing applied yet")

		start(validating) // validated
		Expect(operationLRP(b).ActiveDefinitionId).To(Equal("v3"))
	})

	It("cancels a validation under way without touching anything, and a validated one by rolling back", func() {
		validating := update(validated("v2"))
		canceled, err := b.store.CancelOperation(b.ctx, validating.Id)
		Expect(err).NotTo(HaveOccurred())
		Expect(canceled.Status).To(Equal(models.Operation_CANCELED))
		Expect(canceled.Reason).To(Equal("canceled: its validation stops, and nothing was changed"))
		Expect(operationLRP(b).ActiveDefinitionId).NotTo(Equal("v2"))

		rolling := update(validated("v3"))
		start(rolling) // validated: v3 is active and rolls out
		Expect(operationLRP(b).ActiveDefinitionId).To(Equal("v3"))
		canceled, err = b.store.CancelOperation(b.ctx, rolling.Id)
		Expect(err).NotTo(HaveOccurred())
		Expect(canceled.Status).To(Equal(models.Operation_CANCELED))
		Expect(canceled.Reason).To(ContainSubstring("rolls the LRP back to"))
		Expect(operationLRP(b).ActiveDefinitionId).NotTo(Equal("v3"), "back on the healthy definition")
	})

	// Issue 26: a plain rollback never goes to a definition that failed
	// validation (models.RollbackTarget), and the store records what it
	// needs where convergence writes it.
	It("records a failed validation and a completed rollout; a plain rollback then goes to the last definition that ran", func() {
		v1 := operationLRP(b).ActiveDefinitionId
		failing := update(validated("v2"))
		// Convergence: its instance crashed three times.
		result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Operations: []convergence.OperationWrite{{
			ID: failing.Id, ProcessGuid: "web", ExpectModificationIndex: operationVersion(b, failing.Id),
			Status: models.Operation_ERROR, Reason: "validation of v2 failed: its instance crashed 3 times, last: exited with code 3",
			FailedValidation: true,
		}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
		Expect(operationLRP(b).ActiveDefinitionId).To(Equal(v1), "nothing else changed")

		b.clock.Advance(time.Second)
		update(&models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/web-v3"), UpdateIdentifier: "v3"})
		// Convergence: v3's rollout completed.
		snapshot, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshot.Rollouts).To(HaveLen(1))
		complete := snapshot.Rollouts[0]
		complete.State, complete.FinishedAt = models.RolloutStatus_COMPLETE, b.clock.Now().UnixNano()
		result, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
			ProcessGuid: "web", ExpectModificationIndex: complete.ModificationIndex, ExpectActiveDefinitionID: "v3",
			Record: complete, Settled: true, SetHealthyDefinitionID: "v3",
		}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))

		defs, err := b.store.Definitions(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		type history struct {
			id                    string
			becameHealthy, failed bool
		}
		var got []history
		for _, d := range defs {
			got = append(got, history{d.DefinitionId, d.BecameHealthy, d.FailedValidation})
		}
		Expect(got).To(Equal([]history{{"v3", true, false}, {"v2", false, true}, {v1, true, false}}))

		note := &db.OperationNote{}
		st, err := b.store.Rollback(db.WithOperationNote(b.ctx, note), "web", "", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.ActiveDefinitionId).To(Equal(v1), "the last definition that ran, not v2, newer, which failed validation")
		Expect(note.Warning).To(BeEmpty())

		note = &db.OperationNote{}
		st, err = b.store.Rollback(db.WithOperationNote(b.ctx, note), "web", "v2", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.ActiveDefinitionId).To(Equal("v2"), "named, it is allowed")
		Expect(note.Warning).To(HavePrefix("v2 failed validation"))
		Expect(messages(operation(st.OperationId))[0]).To(Equal("rolling back from " + v1 + " to v2 (warning: " + note.Warning + ")"))
	})

	It("records a failed validation only when convergence says validation refused the definition", func() {
		ended := update(validated("v2"))
		_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Operations: []convergence.OperationWrite{{
			ID: ended.Id, ProcessGuid: "web", ExpectModificationIndex: operationVersion(b, ended.Id),
			Status: models.Operation_ERROR, Reason: "its definition v2 was cleaned up",
		}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(operation(ended.Id).Status).To(Equal(models.Operation_ERROR))
		defs, err := b.store.Definitions(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		for _, d := range defs {
			Expect(d.FailedValidation).To(BeFalse(), d.DefinitionId)
		}
	})

	It("refuses a plain rollback when the only other definition failed validation, changing nothing", func() {
		failing := update(validated("v2"))
		_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Operations: []convergence.OperationWrite{{
			ID: failing.Id, ProcessGuid: "web", ExpectModificationIndex: operationVersion(b, failing.Id),
			Status: models.Operation_ERROR, Reason: "validation of v2 failed", FailedValidation: true,
		}}})
		Expect(err).NotTo(HaveOccurred())
		before := operationLRP(b)
		_, err = b.store.Rollback(b.ctx, "web", "", false)
		Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
		Expect(err.Error()).To(ContainSubstring("did not fail validation"))
		Expect(operationLRP(b)).To(EqualProto(before))
	})

	It("keeps what holds a validation with its operation, from pass to pass, until its instance is placed and it starts", func() {
		op := update(validated("v2"))
		events := &recordedEvents{}
		converger := newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(events))
		pass := func() *convergence.Plan {
			GinkgoHelper()
			snapshot, err := converger.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			cfg := convergence.DefaultConfig()
			cfg.Board = "board-1"
			plan := convergence.Compute(snapshot, b.clock.Now(), cfg)
			_, err = converger.ApplyConvergence(b.ctx, &plan.Writes)
			Expect(err).NotTo(HaveOccurred())
			return plan
		}
		// lastChange is the operation as its latest operation_changed
		// event carried it.
		lastChange := func() *models.Operation {
			GinkgoHelper()
			var last *models.Operation
			for _, e := range events.all() {
				if changed, ok := e.Payload.(*models.OperationChangedEvent); ok && changed.GetOperation().GetId() == op.Id {
					last = changed.GetOperation()
				}
			}
			Expect(last).NotTo(BeNil())
			return last
		}

		By("no cell is present: the validation instance fits none")
		first := b.clock.Now().UnixNano()
		plan := pass()
		Expect(plan.Counts.OperationsBlocked).To(Equal(map[string]int{models.BlockedPlacementRefused: 1}))
		blocked := operation(op.Id).GetBlockedBy()
		Expect(blocked).To(EqualProto(&models.BlockedBy{Reason: models.BlockedPlacementRefused,
			Detail: "the validation instance fits no cell: no present cell has tags [ssd zone-a]", Since: first}))
		list, _, err := b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web"})
		Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(list, func(o *models.Operation) bool { return o.Id == op.Id })
		Expect(i).To(BeNumerically(">=", 0))
		Expect(list[i].GetBlockedBy()).To(EqualProto(blocked), "a list shows it too")
		Expect(lastChange().GetBlockedBy()).To(EqualProto(blocked), "its operation_changed event too")

		By("a pass later, still blocked: its since stands")
		b.clock.Advance(time.Minute)
		pass()
		Expect(operation(op.Id).GetBlockedBy()).To(EqualProto(blocked))

		By("a cell with room joins: the instance is placed, and nothing holds the validation")
		Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: "cell-1", RepUrl: "http://cell-1", Zone: "z1", PlacementTags: []string{"zone-a", "ssd"},
			Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 16384, Instances: 50}}, time.Hour)).To(Succeed())
		plan = pass()
		Expect(plan.Counts.OperationsBlocked).To(BeEmpty())
		Expect(operation(op.Id).GetBlockedBy()).To(BeNil())
		Expect(lastChange().GetBlockedBy()).To(BeNil())

		By("blocked again, then validated: the start clears what the operation kept")
		stale, err := proto.Marshal(&models.BlockedBy{Reason: models.BlockedNoCapacity, Detail: "the validation instance fits no cell: no cell with 4096 MB free memory"})
		Expect(err).NotTo(HaveOccurred())
		b.exec("UPDATE operations SET blocked_by = ? WHERE id = ?", stale, op.Id)
		Expect(operation(op.Id).GetBlockedBy().GetReason()).To(Equal(models.BlockedNoCapacity))
		start(op)
		Expect(operation(op.Id).GetBlockedBy().GetReason()).NotTo(Equal(models.BlockedNoCapacity), "the rollout's blocked_by, if any, is what it shows now")
		Expect(b.count("SELECT COUNT(*) FROM operations WHERE id = ? AND blocked_by IS NULL", op.Id)).To(Equal(1))
	})

	It("never makes a validation instance routable, whatever its rep says", func() {
		update(validated("v2"))
		_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Create: []convergence.NewActualLRP{{
			ProcessGuid: "web", Index: models.ValidationIndex, Domain: "apps", DefinitionID: "v2", CellID: "cell-1",
		}}})
		Expect(err).NotTo(HaveOccurred())
		key := models.ActualLRPKey{ProcessGuid: "web", Index: models.ValidationIndex, Presence: models.ActualLRP_ORDINARY}
		caller := models.Caller{InstanceGuid: "ig-v", CellID: "cell-1"}
		_, err = b.store.ClaimActualLRP(b.ctx, key, caller)
		Expect(err).NotTo(HaveOccurred())
		netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
		started, err := b.store.StartActualLRP(b.ctx, key, caller, netInfo, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(started.State).To(Equal(models.ActualLRP_RUNNING))
		Expect(started.Routable).To(BeFalse())

		_, err = b.store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{{
			ProcessGuid: "web", Index: models.ValidationIndex, Presence: models.ActualLRP_ORDINARY,
			InstanceGuid: "ig-v", State: models.ActualLRP_RUNNING, NetInfo: netInfo, Routable: true,
		}})
		Expect(err).NotTo(HaveOccurred())
		for _, row := range b.instances("web") {
			if row.Index == models.ValidationIndex {
				Expect(row.Routable).To(BeFalse())
			}
		}
	})
})

// operationVersion is the stored operation's modification index.
func operationVersion(b *board, id string) int64 {
	return int64(b.count("SELECT modification_index FROM operations WHERE id = ?", id))
}
