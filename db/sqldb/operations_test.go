package sqldb_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// mustMarshal is m's protobuf, as a board stores a blob.
func mustMarshal(m proto.Message) []byte {
	GinkgoHelper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	Expect(err).NotTo(HaveOccurred())
	return b
}

var _ = forEachDialect("OperationDB", func(b *board) {
	var sink *recordingSink

	BeforeEach(func() {
		sink = recordEvents(b)
	})

	const caller = "tester from 10.0.0.1:4242"
	// noted is a context whose note names the caller, as a handler's is.
	noted := func() (context.Context, *db.OperationNote) {
		note := &db.OperationNote{RequestedBy: caller}
		return db.WithOperationNote(b.ctx, note), note
	}
	// operations lists every operation of the LRP, newest first.
	operations := func(guid string) []*models.Operation {
		GinkgoHelper()
		ops, next, err := b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: guid, Limit: models.MaxOperationsPage})
		Expect(err).NotTo(HaveOccurred())
		Expect(next).To(BeEmpty())
		return ops
	}
	operation := func(id string) *models.Operation {
		GinkgoHelper()
		op, err := b.store.Operation(b.ctx, id)
		Expect(err).NotTo(HaveOccurred())
		return op
	}
	countOperations := func() int {
		GinkgoHelper()
		return b.count("SELECT COUNT(*) FROM operations")
	}
	// parameters unpacks the request an operation holds.
	parameters := func(op *models.Operation, into proto.Message) proto.Message {
		GinkgoHelper()
		Expect(op.Parameters.UnmarshalTo(into)).To(Succeed())
		return into
	}
	history := func(at int64, lines ...string) []*models.OperationEvent {
		events := make([]*models.OperationEvent, len(lines))
		for i, line := range lines {
			events[i] = &models.OperationEvent{At: at, Message: line}
		}
		return events
	}
	desire := func(guid string, instances int32) {
		GinkgoHelper()
		_, err := b.store.DesireLRP(b.ctx, newLRP(guid, "apps", instances))
		Expect(err).NotTo(HaveOccurred())
	}
	definitionUpdate := func(id string) *models.DesiredLRPUpdate {
		return &models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/web-"+id), UpdateIdentifier: id}
	}
	// update applies an update with the caller's note and returns the
	// operation it recorded.
	update := func(u *models.DesiredLRPUpdate) *models.Operation {
		GinkgoHelper()
		ctx, note := noted()
		_, err := b.store.UpdateDesiredLRP(ctx, "web", u)
		Expect(err).NotTo(HaveOccurred())
		Expect(note.Operation).NotTo(BeNil())
		return note.Operation
	}
	queued := func(id string) *models.DesiredLRPUpdate {
		u := definitionUpdate(id)
		u.Queue = true
		return u
	}
	get := func() *models.DesiredLRP {
		GinkgoHelper()
		lrp, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		return lrp
	}
	now := func() int64 { return b.clock.Now().UnixNano() }

	Describe("every write records its operation, in its transaction", func() {
		It("a desire records DESIRE, FINISHED: the request, the caller and what happened", func() {
			ctx, note := noted()
			lrp := newLRP("web", "apps", 3)
			_, err := b.store.DesireLRP(ctx, lrp)
			Expect(err).NotTo(HaveOccurred())

			ops := operations("web")
			Expect(ops).To(HaveLen(1))
			op := ops[0]
			t := now()
			Expect(op).To(EqualProto(&models.Operation{
				Id: op.Id, ProcessGuid: "web", Sequence: 1, Kind: models.Operation_DESIRE, Parameters: op.Parameters,
				Status: models.Operation_FINISHED, CreatedAt: t, StartedAt: t, FinishedAt: t,
				RequestedBy: caller, DefinitionId: "v1", History: history(t, "desired 3 instances of definition v1"),
			}))
			Expect(op.Id).To(MatchRegexp(`^[0-9a-f]{24}$`))
			// The request less its definition, which is kept once, in
			// run_infos, under the operation's definition_id.
			kept := proto.Clone(lrp).(*models.DesiredLRP)
			kept.Definition = nil
			Expect(parameters(op, &models.DesireLRPRequest{})).To(EqualProto(&models.DesireLRPRequest{DesiredLrp: kept}))
			Expect(string(op.Parameters.Value)).NotTo(ContainSubstring(lrp.Definition.Action.Path), "no copy of the definition")
			Expect(note.Operation).To(EqualProto(op))
			Expect(operation(op.Id)).To(EqualProto(op))
		})

		It("a guid desired again numbers its operations on from the ones before, on every path", func() {
			desire("web", 1)
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			// v1 is stored already: the transactional path on every dialect.
			desire("web", 1)
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			// A new definition id: Postgres's one-statement path.
			again := newLRP("web", "apps", 1)
			again.Definition = newDefinition("v2", "/bin/web-2")
			_, err := b.store.DesireLRP(b.ctx, again)
			Expect(err).NotTo(HaveOccurred())

			var kinds []models.Operation_Kind
			var sequences []int64
			for _, op := range operations("web") {
				kinds = append(kinds, op.Kind)
				sequences = append(sequences, op.Sequence)
			}
			Expect(sequences).To(Equal([]int64{5, 4, 3, 2, 1}))
			Expect(kinds).To(Equal([]models.Operation_Kind{models.Operation_DESIRE, models.Operation_REMOVE,
				models.Operation_DESIRE, models.Operation_REMOVE, models.Operation_DESIRE}))
		})

		Describe("on a desired LRP", func() {
			BeforeEach(func() {
				desire("web", 3)
				b.clock.Advance(time.Second)
				sink.take()
			})

			It("an update that activates no definition records UPDATE, FINISHED", func() {
				u := &models.DesiredLRPUpdate{Instances: int32p(5), Annotation: stringp("note")}
				op := update(u)
				t := now()
				Expect(op).To(EqualProto(&models.Operation{
					Id: op.Id, ProcessGuid: "web", Sequence: 2, Kind: models.Operation_UPDATE, Parameters: op.Parameters,
					Status: models.Operation_FINISHED, CreatedAt: t, StartedAt: t, FinishedAt: t, RequestedBy: caller,
					History: history(t, "instances 3 → 5; annotation replaced"),
				}))
				Expect(parameters(op, &models.UpdateDesiredLRPRequest{})).
					To(EqualProto(&models.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: u}))
				Expect(operations("web")[0]).To(EqualProto(op))
				events := sink.take()
				Expect(events[len(events)-1].Type).To(Equal(models.EventOperationChanged))
				Expect(events[len(events)-1].Payload).To(EqualProto(&models.OperationChangedEvent{Operation: op}))
			})

			It("an update that re-sends the active definition records UPDATE, FINISHED", func() {
				u := definitionUpdate("v1")
				u.Definition = newDefinition("v1", "/bin/web")
				op := update(u)
				Expect(op.Kind).To(Equal(models.Operation_UPDATE))
				Expect(op.Status).To(Equal(models.Operation_FINISHED))
				Expect(op.History[0].Message).To(Equal("definition v1 is active already"))
			})

			It("an update that activates a definition records UPDATE_DEFINITION, IN_PROGRESS, leased to the converging board", func() {
				tenure, err := b.store.AcquireLease(b.ctx, "convergence", "board-1", 30*time.Second)
				Expect(err).NotTo(HaveOccurred())
				Expect(tenure).To(BeNumerically(">", 0))

				op := update(definitionUpdate("v2"))
				t := now()
				// Until the convergence lease runs out: 30 s after it was
				// taken (by the database's clock), on the board's clock.
				Expect(op.LeaseExpiresAt).To(BeNumerically("~", t+int64(30*time.Second), int64(2*time.Second)))
				Expect(op).To(EqualProto(&models.Operation{
					Id: op.Id, ProcessGuid: "web", Sequence: 2, Kind: models.Operation_UPDATE_DEFINITION,
					Parameters: op.Parameters, Status: models.Operation_IN_PROGRESS, CreatedAt: t, StartedAt: t,
					LeaseOwner: "board-1", LeaseExpiresAt: op.LeaseExpiresAt, RequestedBy: caller, DefinitionId: "v2",
					History: history(t, "definition v2 activated: rolling from v1 to v2"),
				}))
				st, err := b.store.RolloutStatus(b.ctx, "web")
				Expect(err).NotTo(HaveOccurred())
				Expect(st.OperationId).To(Equal(op.Id))
				Expect(eventTypes(sink.take())).To(Equal([]string{models.EventDesiredLRPChanged, models.EventRolloutChanged,
					models.EventOperationChanged}))
			})

			It("a change of definition while nobody owns the convergence lease is leased to no one", func() {
				_, err := b.store.AcquireLease(b.ctx, "convergence", "board-1", 100*time.Millisecond)
				Expect(err).NotTo(HaveOccurred())
				// Leases run out by the database's clock: real time.
				time.Sleep(150 * time.Millisecond)
				op := update(definitionUpdate("v2"))
				Expect(op.LeaseOwner).To(BeEmpty())
				Expect(op.LeaseExpiresAt).To(BeZero())
			})

			It("a remove records REMOVE, FINISHED", func() {
				ctx, note := noted()
				Expect(b.store.RemoveDesiredLRP(ctx, "web")).To(Succeed())
				op := note.Operation
				t := now()
				Expect(op).To(EqualProto(&models.Operation{
					Id: op.Id, ProcessGuid: "web", Sequence: 2, Kind: models.Operation_REMOVE, Parameters: op.Parameters,
					Status: models.Operation_FINISHED, CreatedAt: t, StartedAt: t, FinishedAt: t, RequestedBy: caller,
					History: history(t, "removed"),
				}))
				Expect(parameters(op, &models.RemoveDesiredLRPRequest{})).To(EqualProto(&models.RemoveDesiredLRPRequest{ProcessGuid: "web"}))
				Expect(operations("web")[0]).To(EqualProto(op))
			})

			It("a rollback records ROLLBACK and an abort ABORT, IN_PROGRESS, named by the rollout they start", func() {
				update(definitionUpdate("v2"))
				b.clock.Advance(time.Second)
				ctx, note := noted()
				st, err := b.store.Rollback(ctx, "web", "", false)
				Expect(err).NotTo(HaveOccurred())
				rollback := note.Operation
				t := now()
				Expect(rollback).To(EqualProto(&models.Operation{
					Id: rollback.Id, ProcessGuid: "web", Sequence: 3, Kind: models.Operation_ROLLBACK, Parameters: rollback.Parameters,
					Status: models.Operation_IN_PROGRESS, CreatedAt: t, StartedAt: t, RequestedBy: caller, DefinitionId: "v1",
					History: history(t, "rolling back from v2 to v1"),
				}))
				Expect(parameters(rollback, &models.RollbackRequest{})).To(EqualProto(&models.RollbackRequest{ProcessGuid: "web"}))
				Expect(st.OperationId).To(Equal(rollback.Id))

				update(definitionUpdate("v3"))
				ctx, note = noted()
				st, err = b.store.AbortRollout(ctx, "web", false)
				Expect(err).NotTo(HaveOccurred())
				abort := note.Operation
				Expect(abort.Kind).To(Equal(models.Operation_ABORT))
				Expect(abort.Status).To(Equal(models.Operation_IN_PROGRESS))
				Expect(abort.Sequence).To(BeEquivalentTo(5))
				Expect(abort.DefinitionId).To(Equal("v1"))
				Expect(abort.History[0].Message).To(Equal("aborting the rollout to v3: rolling back to v1"))
				Expect(parameters(abort, &models.AbortRolloutRequest{})).To(EqualProto(&models.AbortRolloutRequest{ProcessGuid: "web"}))
				Expect(st.OperationId).To(Equal(abort.Id))
				Expect(operation(abort.Id)).To(EqualProto(abort))
			})

			It("a write that is refused records nothing", func() {
				update(definitionUpdate("v2"))
				tag := get().ModificationTag
				before := countOperations()
				sink.take()
				refused := []struct {
					errType models.Error_Type
					call    func(ctx context.Context) error
				}{
					{models.Error_ResourceExists, func(ctx context.Context) error {
						_, err := b.store.DesireLRP(ctx, newLRP("web", "apps", 1))
						return err
					}},
					{models.Error_ResourceConflict, func(ctx context.Context) error {
						stale := &models.ModificationTag{Epoch: tag.Epoch, Index: tag.Index - 1}
						_, err := b.store.UpdateDesiredLRP(ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(1), ModificationTag: stale})
						return err
					}},
					{models.Error_ResourceConflict, func(ctx context.Context) error {
						// v2 is stored with other content.
						_, err := b.store.UpdateDesiredLRP(ctx, "web", &models.DesiredLRPUpdate{
							Definition: newDefinition("", "/bin/other"), UpdateIdentifier: "v2", Queue: true})
						return err
					}},
					{models.Error_InvalidRequest, func(ctx context.Context) error {
						_, err := b.store.UpdateDesiredLRP(ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(-1)})
						return err
					}},
					{models.Error_ResourceNotFound, func(ctx context.Context) error {
						_, err := b.store.UpdateDesiredLRP(ctx, "nope", &models.DesiredLRPUpdate{Instances: int32p(1)})
						return err
					}},
					{models.Error_ResourceNotFound, func(ctx context.Context) error { return b.store.RemoveDesiredLRP(ctx, "nope") }},
					{models.Error_InvalidStateTransition, func(ctx context.Context) error {
						_, err := b.store.Rollback(ctx, "web", "v2", false)
						return err
					}},
					{models.Error_ResourceNotFound, func(ctx context.Context) error {
						_, err := b.store.Rollback(ctx, "web", "v9", false)
						return err
					}},
					{models.Error_ResourceNotFound, func(ctx context.Context) error {
						_, err := b.store.AbortRollout(ctx, "nope", false)
						return err
					}},
				}
				for i, r := range refused {
					ctx, note := noted()
					Expect(r.call(ctx)).To(HaveErrorType(r.errType), "write %d", i)
					Expect(note.Operation).To(BeNil(), "write %d", i)
				}
				Expect(countOperations()).To(Equal(before))
				Expect(sink.take()).To(BeEmpty())

				// An abort with the healthy definition active is refused too.
				b.exec("UPDATE desired_lrps SET healthy_definition_id = active_definition_id")
				_, err := b.store.AbortRollout(b.ctx, "web", false)
				Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
				Expect(countOperations()).To(Equal(before))
			})
		})
	})

	It("stores parameters and history packed, and reads those written before packing: plain protobuf", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		ops := operations("web")
		Expect(ops).To(HaveLen(1))
		desired := ops[0]
		var params, hist []byte
		Expect(b.conn.QueryRow(dialect.Rebind(dialect.Name(b.dialect), "SELECT parameters, history FROM operations WHERE id = ?"), desired.Id).Scan(&params, &hist)).To(Succeed())
		Expect(params[:2]).To(Equal([]byte{0x00, 0x02}))
		Expect(sqldb.Unpack(params)).To(Equal(mustMarshal(desired.Parameters)))

		// As a board before packing wrote them.
		plainParams := mustMarshal(desired.Parameters)
		plainHistory := mustMarshal(&models.OperationHistory{Events: desired.History})
		b.exec("UPDATE operations SET parameters = ?, history = ? WHERE id = ?", plainParams, plainHistory, desired.Id)
		Expect(operation(desired.Id)).To(EqualProto(desired))
	})

	It("numbers concurrent updates of one LRP 1, 2, 3, … in commit order", func() {
		desire("web", 1)
		sink.take()
		const writers, updates = 8, 5
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				defer GinkgoRecover()
				for u := range updates {
					_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp(fmt.Sprintf("%d/%d", w, u))})
					Expect(err).NotTo(HaveOccurred())
				}
			})
		}
		wg.Wait()

		// Events leave in commit order: each update's desired_lrp_changed,
		// then its operation_changed.
		events := sink.take()
		Expect(events).To(HaveLen(2 * writers * updates))
		var committed []string
		for i := 0; i < len(events); i += 2 {
			annotation := events[i].Payload.(*models.DesiredLRPChangedEvent).After.Annotation
			op := events[i+1].Payload.(*models.OperationChangedEvent).Operation
			Expect(op.Sequence).To(BeEquivalentTo(i/2+2), "the %d. commit", i/2+1)
			req := parameters(op, &models.UpdateDesiredLRPRequest{}).(*models.UpdateDesiredLRPRequest)
			Expect(req.Update.GetAnnotation()).To(Equal(annotation))
			committed = append(committed, op.Id)
		}
		// Stored alike, and listed newest first by id in that order too.
		var listed []string
		var sequences []int64
		for _, op := range operations("web") {
			listed = append(listed, op.Id)
			sequences = append(sequences, op.Sequence)
		}
		slices.Reverse(listed)
		Expect(listed[1:]).To(Equal(committed))
		for i, seq := range sequences {
			Expect(seq).To(BeEquivalentTo(writers*updates + 1 - i))
		}
	})

	Describe("changes of definition", func() {
		BeforeEach(func() {
			desire("web", 3)
			b.clock.Advance(time.Second)
		})

		It("supersede the change in progress and every pending one: they end CANCELED, naming it", func() {
			a := update(definitionUpdate("v2"))
			pending1 := update(queued("v3"))
			pending2 := update(queued("v4"))
			Expect(pending1.Status).To(Equal(models.Operation_PENDING))
			Expect(pending2.Status).To(Equal(models.Operation_PENDING))
			b.clock.Advance(time.Second)
			sink.take()

			d := update(definitionUpdate("v5"))
			t := now()
			Expect(d.Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(d.Sequence).To(BeEquivalentTo(5))
			reason := fmt.Sprintf("superseded by operation %s (#5)", d.Id)
			for _, old := range []*models.Operation{a, pending1, pending2} {
				got := operation(old.Id)
				Expect(got.Status).To(Equal(models.Operation_CANCELED))
				Expect(got.Reason).To(Equal(reason))
				Expect(got.FinishedAt).To(Equal(t))
				Expect(got.History[len(got.History)-1]).To(EqualProto(&models.OperationEvent{At: t, Message: reason}))
			}
			Expect(operation(a.Id).StartedAt).To(Equal(a.StartedAt))
			Expect(operation(pending1.Id).StartedAt).To(BeZero())
			Expect(get().ActiveDefinitionId).To(Equal("v5"))

			events := sink.take()
			var changed []string
			for _, e := range events {
				if e.Type == models.EventOperationChanged {
					changed = append(changed, e.Payload.(*models.OperationChangedEvent).Operation.Id)
				}
			}
			Expect(changed).To(Equal([]string{d.Id, a.Id, pending1.Id, pending2.Id}))
		})

		It("queued while one is in progress, stores the definition and waits PENDING, changing nothing else", func() {
			a := update(definitionUpdate("v2"))
			before := get()
			instances := b.instances("web")
			st, err := b.store.RolloutStatus(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(time.Second)
			sink.take()

			u := queued("v3")
			u.Instances = int32p(5)
			u.ModificationTag = before.ModificationTag
			ctx, note := noted()
			answered, err := b.store.UpdateDesiredLRP(ctx, "web", u)
			Expect(err).NotTo(HaveOccurred())
			Expect(answered).To(EqualProto(before))
			Expect(get()).To(EqualProto(before))
			Expect(b.instances("web")).To(HaveLen(len(instances)))
			after, err := b.store.RolloutStatus(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(after).To(EqualProto(st))
			def, err := b.store.Definition(b.ctx, "web", "v3")
			Expect(err).NotTo(HaveOccurred())
			Expect(def.Action.Path).To(Equal("/bin/web-v3"))

			op := note.Operation
			t := now()
			Expect(op).To(EqualProto(&models.Operation{
				Id: op.Id, ProcessGuid: "web", Sequence: 3, Kind: models.Operation_UPDATE_DEFINITION, Parameters: op.Parameters,
				Status: models.Operation_PENDING, CreatedAt: t, RequestedBy: caller, DefinitionId: "v3",
				History: history(t, fmt.Sprintf("definition v3 stored; queued behind operation %s (#2)", a.Id)),
			}))
			Expect(operation(a.Id).Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(eventTypes(sink.take())).To(Equal([]string{models.EventOperationChanged}))

			// A second one waits behind the first.
			again := update(queued("v4"))
			Expect(again.History[0].Message).To(Equal(fmt.Sprintf("definition v4 stored; queued behind operation %s (#3)", op.Id)))
		})

		It("queued with nothing in progress, applies at once", func() {
			op := update(queued("v2"))
			Expect(op.Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(get().ActiveDefinitionId).To(Equal("v2"))
		})

		It("leave an update without a new definition to run at once beside them", func() {
			a := update(definitionUpdate("v2"))
			scale := update(&models.DesiredLRPUpdate{Instances: int32p(4), Queue: true})
			Expect(scale.Kind).To(Equal(models.Operation_UPDATE))
			Expect(scale.Status).To(Equal(models.Operation_FINISHED))
			Expect(get().Instances).To(BeEquivalentTo(4))
			Expect(operation(a.Id).Status).To(Equal(models.Operation_IN_PROGRESS))
		})
	})

	It("a remove cancels the operation in progress and evicts those pending, naming itself", func() {
		desire("web", 1)
		a := update(definitionUpdate("v2"))
		pending := update(queued("v3"))
		b.clock.Advance(time.Second)
		ctx, note := noted()
		Expect(b.store.RemoveDesiredLRP(ctx, "web")).To(Succeed())
		remove := note.Operation
		reason := fmt.Sprintf("its LRP was removed by operation %s (#4)", remove.Id)
		got := operation(a.Id)
		Expect(got.Status).To(Equal(models.Operation_CANCELED))
		Expect(got.Reason).To(Equal(reason))
		got = operation(pending.Id)
		Expect(got.Status).To(Equal(models.Operation_EVICTED))
		Expect(got.Reason).To(Equal(reason))
		Expect(got.FinishedAt).To(Equal(now()))
		Expect(got.StartedAt).To(BeZero())
	})

	Describe("CancelOperation", func() {
		BeforeEach(func() {
			desire("web", 3)
			b.clock.Advance(time.Second)
		})

		It("ends a PENDING operation CANCELED and changes nothing else", func() {
			update(definitionUpdate("v2"))
			pending := update(queued("v3"))
			before := get()
			b.clock.Advance(time.Second)
			sink.take()

			ctx, note := noted()
			canceled, err := b.store.CancelOperation(ctx, pending.Id)
			Expect(err).NotTo(HaveOccurred())
			t := now()
			Expect(canceled.Status).To(Equal(models.Operation_CANCELED))
			Expect(canceled.Reason).To(Equal("canceled by " + caller))
			Expect(canceled.FinishedAt).To(Equal(t))
			Expect(canceled.History[len(canceled.History)-1]).To(EqualProto(&models.OperationEvent{At: t, Message: canceled.Reason}))
			Expect(operation(pending.Id)).To(EqualProto(canceled))
			Expect(note.Operation).To(BeNil())
			Expect(get()).To(EqualProto(before))
			logged := sink.take()
			Expect(logged).To(HaveLen(1))
			expectEvent(logged[0], models.EventOperationChanged, "web", &models.OperationChangedEvent{Operation: canceled})
		})

		It("aborts an IN_PROGRESS change of definition: an ABORT operation rolls back to the healthy definition", func() {
			a := update(definitionUpdate("v2"))
			pending := update(queued("v3"))
			b.clock.Advance(time.Second)

			ctx, note := noted()
			canceled, err := b.store.CancelOperation(ctx, a.Id)
			Expect(err).NotTo(HaveOccurred())
			abort := note.Operation
			Expect(abort).NotTo(BeNil())
			Expect(abort.Kind).To(Equal(models.Operation_ABORT))
			Expect(abort.Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(abort.DefinitionId).To(Equal("v1"))
			Expect(abort.RequestedBy).To(Equal(caller))
			Expect(abort.History[0].Message).To(Equal(fmt.Sprintf("canceling operation %s (#2): rolling back from v2 to v1", a.Id)))
			Expect(parameters(abort, &models.CancelOperationRequest{})).To(EqualProto(&models.CancelOperationRequest{Id: a.Id}))

			Expect(canceled.Id).To(Equal(a.Id))
			Expect(canceled.Status).To(Equal(models.Operation_CANCELED))
			Expect(canceled.Reason).To(Equal(fmt.Sprintf("canceled by %s: operation %s (#4) rolls the LRP back to v1", caller, abort.Id)))
			Expect(operation(a.Id)).To(EqualProto(canceled))
			Expect(operation(pending.Id).Status).To(Equal(models.Operation_CANCELED))

			lrp := get()
			Expect(lrp.ActiveDefinitionId).To(Equal("v1"))
			Expect(lrp.ActiveDefinitionId).To(Equal(lrp.HealthyDefinitionId))
			st, err := b.store.RolloutStatus(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(st.OperationId).To(Equal(abort.Id))
		})

		It("just cancels an IN_PROGRESS operation when the healthy definition is active already", func() {
			update(definitionUpdate("v2"))
			ctx, note := noted()
			_, err := b.store.Rollback(ctx, "web", "v1", false)
			Expect(err).NotTo(HaveOccurred())
			rollback := note.Operation
			before := get()
			operationsBefore := countOperations()

			canceled, err := b.store.CancelOperation(b.ctx, rollback.Id)
			Expect(err).NotTo(HaveOccurred())
			Expect(canceled.Status).To(Equal(models.Operation_CANCELED))
			Expect(canceled.Reason).To(ContainSubstring("nothing to roll back"))
			Expect(get()).To(EqualProto(before))
			Expect(countOperations()).To(Equal(operationsBefore))
		})

		It("refuses an operation that has ended, an unknown one and no id, writing nothing", func() {
			op := update(&models.DesiredLRPUpdate{Instances: int32p(2)})
			sink.take()
			_, err := b.store.CancelOperation(b.ctx, op.Id)
			Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
			Expect(err.Error()).To(ContainSubstring(op.Id))
			Expect(operation(op.Id)).To(EqualProto(op))

			_, err = b.store.CancelOperation(b.ctx, "00000000000000000000beef")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(err.Error()).To(ContainSubstring("00000000000000000000beef"))
			_, err = b.store.CancelOperation(b.ctx, "")
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(sink.take()).To(BeEmpty())
		})
	})

	Describe("listing", func() {
		var seed seeder
		var all []string // every id, newest first

		// seedOperations stores n operations of three LRPs straight into the
		// table, every third one pending, the rest finished updates.
		seedOperations := func(n int) {
			GinkgoHelper()
			t := now()
			Expect(seed.insert(b.ctx, "operations", []string{
				"id", "process_guid", "sequence", "kind", "status", "reason", "parameters", "definition_id", "requested_by",
				"created_at", "started_at", "finished_at", "lease_owner", "lease_expires_at", "history", "ended",
				"modification_index",
			}, n, func(i int, args []any) []any {
				id := fmt.Sprintf("%016x%08x", t+int64(i), i)
				guid := []string{"api", "web", "worker"}[i%3]
				kind, status, ended := "UPDATE", "FINISHED", true
				if i%3 == 1 {
					kind, status, ended = "UPDATE_DEFINITION", "PENDING", false
				}
				return append(args, id, guid, int64(i/3+1), kind, status, "", []byte{}, "", "", t+int64(i), 0, 0, "", 0,
					[]byte{}, ended, 1)
			})).To(Succeed())
			all = nil
			for i := n - 1; i >= 0; i-- {
				all = append(all, fmt.Sprintf("%016x%08x", t+int64(i), i))
			}
		}
		// pages lists every page of filter, checking each is full but the
		// last, and returns the ids in the order listed.
		pages := func(filter db.OperationFilter) []string {
			GinkgoHelper()
			var ids []string
			for range 1000 {
				ops, next, err := b.store.Operations(b.ctx, filter)
				Expect(err).NotTo(HaveOccurred())
				for _, op := range ops {
					ids = append(ids, op.Id)
				}
				if next == "" {
					return ids
				}
				Expect(ops).To(HaveLen(filter.Limit))
				Expect(next).To(Equal(ops[len(ops)-1].Id))
				filter.Cursor = next
			}
			Fail("the listing never ended")
			return nil
		}
		matching := func(keep func(i int) bool) []string {
			var ids []string
			n := len(all)
			for j, id := range all {
				if keep(n - 1 - j) {
					ids = append(ids, id)
				}
			}
			return ids
		}

		BeforeEach(func() {
			seed = seeder{conn: b.conn, dialect: b.dialect}
			seedOperations(350)
		})

		It("pages through every operation newest first, without a repeat or a gap", func() {
			Expect(pages(db.OperationFilter{Limit: 40})).To(Equal(all))
			Expect(pages(db.OperationFilter{Limit: 350})).To(Equal(all))
			Expect(pages(db.OperationFilter{Limit: 1000})).To(Equal(all))
		})

		It("filters by LRP, status and kind, page by page", func() {
			Expect(pages(db.OperationFilter{ProcessGuid: "web", Limit: 25})).To(Equal(matching(func(i int) bool { return i%3 == 1 })))
			Expect(pages(db.OperationFilter{Status: models.Operation_FINISHED, Limit: 33})).
				To(Equal(matching(func(i int) bool { return i%3 != 1 })))
			Expect(pages(db.OperationFilter{Kind: models.Operation_UPDATE, ProcessGuid: "api", Limit: 10})).
				To(Equal(matching(func(i int) bool { return i%3 == 0 })))
			Expect(pages(db.OperationFilter{Kind: models.Operation_UPDATE, ProcessGuid: "web", Limit: 10})).To(BeEmpty())
		})

		It("refuses an LRP's cursor once its operation is gone, naming the cursor", func() {
			ops, next, err := b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web", Limit: 10})
			Expect(err).NotTo(HaveOccurred())
			Expect(ops).To(HaveLen(10))
			b.exec("DELETE FROM operations WHERE id = ?", next)
			_, _, err = b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web", Cursor: next, Limit: 10})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("cursor"))
			_, _, err = b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "api", Cursor: ops[0].Id, Limit: 10})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest), "a cursor of another LRP")
			// Across LRPs the cursor is an id: a gone one still marks the place.
			Expect(pages(db.OperationFilter{Cursor: next, Limit: 100})).To(Equal(all[slices.Index(all, next)+1:]))
		})

		It("answers the default page size, and refuses a page too large", func() {
			ops, next, err := b.store.Operations(b.ctx, db.OperationFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(ops).To(HaveLen(models.DefaultOperationsPage))
			Expect(next).To(Equal(all[models.DefaultOperationsPage-1]))
			_, _, err = b.store.Operations(b.ctx, db.OperationFilter{Limit: models.MaxOperationsPage + 1})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("limit"))
		})

		It("reads one operation, and names an unknown one", func() {
			op := operation(all[7])
			Expect(op.Id).To(Equal(all[7]))
			Expect(op.Status).To(Equal(models.Operation_FINISHED))
			_, err := b.store.Operation(b.ctx, "ffffffffffffffff00000000")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(err.Error()).To(ContainSubstring("ffffffffffffffff00000000"))
		})
	})

	Describe("PruneOperations", func() {
		It("deletes old ended operations, keeping each LRP's newest and the young ones, at most limit at a time", func() {
			desire("web", 1)
			desire("api", 1)
			for i := range 6 {
				b.clock.Advance(time.Second)
				_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp(fmt.Sprint(i))})
				Expect(err).NotTo(HaveOccurred())
			}
			b.clock.Advance(time.Second)
			update(definitionUpdate("v2")) // in progress: never pruned
			cutoff := b.clock.Now()
			b.clock.Advance(time.Second)
			_, err := b.store.UpdateDesiredLRP(b.ctx, "api", &models.DesiredLRPUpdate{Annotation: stringp("young")})
			Expect(err).NotTo(HaveOccurred())
			sequences := func(guid string) []int64 {
				var out []int64
				for _, op := range operations(guid) {
					out = append(out, op.Sequence)
				}
				return out
			}
			// web: 1 desire, 2-7 updates, 8 in progress; api: 1 desire, 2 young.

			deleted, err := b.store.PruneOperations(b.ctx, cutoff, 3, 2)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(Equal(2))
			Expect(sequences("web")).To(Equal([]int64{8, 7, 6, 5, 4, 3}))

			deleted, err = b.store.PruneOperations(b.ctx, cutoff, 3, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(Equal(3))
			Expect(sequences("web")).To(Equal([]int64{8, 7, 6}))
			Expect(sequences("api")).To(Equal([]int64{2, 1}))

			// Keeping none keeps the newest all the same: it numbers the next.
			deleted, err = b.store.PruneOperations(b.ctx, b.clock.Now().Add(time.Hour), 0, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(Equal(3))
			Expect(sequences("web")).To(Equal([]int64{8}))
			Expect(sequences("api")).To(Equal([]int64{2}))
			Expect(update(&models.DesiredLRPUpdate{}).Sequence).To(BeEquivalentTo(9))
		})

		// A desire numbered 1 on the guess that the guid is new, counting
		// on the unique index to refuse the 1 otherwise, was number 1
		// again once pruning had deleted number 1 but kept the newest
		// ([3, 1], not [4, 3]).
		It("numbers a desire of a guid whose first operations were pruned on from its newest", func() {
			desire("web", 1)
			b.clock.Advance(time.Second)
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("a")})
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(time.Second)
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			b.clock.Advance(time.Second)
			_, err = b.store.PruneOperations(b.ctx, b.clock.Now(), 1, 100)
			Expect(err).NotTo(HaveOccurred())
			newest := operations("web")
			Expect(newest).To(HaveLen(1))
			Expect(newest[0].Sequence).To(BeNumerically(">", 1), "number 1 was pruned")

			// A definition not stored for the guid: on Postgres the
			// one-statement desire would take it, were it not for the
			// operations.
			again := newLRP("web", "apps", 1)
			again.Definition = newDefinition("v2", "/bin/web-2")
			_, err = b.store.DesireLRP(b.ctx, again)
			Expect(err).NotTo(HaveOccurred())
			var got []int64
			for _, op := range operations("web") {
				got = append(got, op.Sequence)
			}
			Expect(got).To(Equal([]int64{newest[0].Sequence + 1, newest[0].Sequence}))
		})

		It("goes through more than a batch in one call, reading past what it keeps", func() {
			// 2,500 ended operations of 5 LRPs, 500 each, an hour old.
			t := b.clock.Now().Add(-time.Hour).UnixNano()
			seed := seeder{conn: b.conn, dialect: b.dialect}
			Expect(seed.insert(b.ctx, "operations", []string{
				"id", "process_guid", "sequence", "kind", "status", "reason", "definition_id", "requested_by",
				"created_at", "started_at", "finished_at", "lease_owner", "ended", "modification_index",
			}, 2500, func(i int, args []any) []any {
				at := t + int64(i)
				return append(args, fmt.Sprintf("%016x%08x", at, i), fmt.Sprintf("lrp-%d", i%5), int64(i/5+1),
					"UPDATE", "FINISHED", "", "", "", at, at, at, "", true, 1)
			})).To(Succeed())

			deleted, err := b.store.PruneOperations(b.ctx, b.clock.Now(), 100, 10000)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(Equal(2000))
			for i := range 5 {
				ops := operations(fmt.Sprintf("lrp-%d", i))
				Expect(ops).To(HaveLen(100))
				Expect(ops[0].Sequence).To(BeEquivalentTo(500))
				Expect(ops[99].Sequence).To(BeEquivalentTo(401))
			}
		})
	})
})
