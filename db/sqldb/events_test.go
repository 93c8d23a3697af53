package sqldb_test

import (
	"database/sql"
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

// recordingSink keeps every published event, in publish order.
type recordingSink struct {
	mu     sync.Mutex
	events []models.Event
}

func (r *recordingSink) Publish(events ...models.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
}

// take returns the events published since the last take.
func (r *recordingSink) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *recordingSink) take() []models.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// recordEvents gives the board a store that publishes to a recording sink.
func recordEvents(b *board) *recordingSink {
	sink := &recordingSink{}
	b.store = newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(sink))
	return sink
}

// eventTypes lists the types of events, in order.
func eventTypes(events []models.Event) []string {
	types := make([]string, len(events))
	for i, e := range events {
		types[i] = e.Type
	}
	return types
}

// expectEvent checks one event's type, key and payload.
func expectEvent(e models.Event, eventType, key string, payload proto.Message) {
	GinkgoHelper()
	Expect(e.Type).To(Equal(eventType))
	Expect(e.Key).To(Equal(key))
	Expect(e.Payload).To(EqualProto(payload))
}

func withoutDefinition(lrp *models.DesiredLRP) *models.DesiredLRP {
	light := proto.Clone(lrp).(*models.DesiredLRP)
	light.Definition = nil
	return light
}

var _ = forEachDialect("events of desired LRP writes", func(b *board) {
	var sink *recordingSink

	BeforeEach(func() {
		sink = recordEvents(b)
	})

	get := func(guid string) *models.DesiredLRP {
		lrp, err := b.store.DesiredLRPByProcessGuid(b.ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		return lrp
	}

	Describe("a desire", func() {
		It("announces the LRP without its definition, then each instance as stored", func() {
			stored, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())

			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{"desired_lrp_created",
				"actual_lrp_created", "actual_lrp_created", "actual_lrp_created", "operation_changed"}))
			expectEvent(events[0], "desired_lrp_created", "web",
				&models.DesiredLRPCreatedEvent{DesiredLrp: withoutDefinition(stored)})
			for i, instance := range b.instances("web") {
				Expect(instance.DefinitionId).To(Equal("v1"))
				expectEvent(events[1+i], "actual_lrp_created", "web", &models.ActualLRPCreatedEvent{ActualLrp: instance})
			}
			expectEvent(events[4], "operation_changed", "web", &models.OperationChangedEvent{Operation: newestOperation(b, "web")})
		})

		It("announces only the instances it adds next to one left from before", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())
			b.setState("web", 1, models.ActualLRP_RUNNING, "cell-1")
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			sink.take()

			// v1 is stored already, so this takes the transactional path on
			// every dialect.
			_, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())
			expectCreatedAt(sink.take(), b.instances("web"), 0, 2)
		})

		It("announces only the instances it adds when the definition is new too", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())
			b.setState("web", 1, models.ActualLRP_RUNNING, "cell-1")
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			sink.take()

			// A definition id not stored yet; the guid has the operations
			// of its earlier LRP, so Postgres too takes the transactional
			// path.
			again := newLRP("web", "apps", 3)
			again.Definition = newDefinition("v2", "/bin/web-2")
			_, err = b.store.DesireLRP(b.ctx, again)
			Expect(err).NotTo(HaveOccurred())
			expectCreatedAt(sink.take(), b.instances("web"), 0, 2)
		})

		It("announces nothing when refused", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			sink.take()
			_, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
			Expect(err).To(HaveErrorType(models.Error_ResourceExists))
			Expect(sink.take()).To(BeEmpty())
		})
	})

	Describe("an update", func() {
		var desired *models.DesiredLRP

		BeforeEach(func() {
			var err error
			desired, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())
			sink.take()
			b.clock.Advance(1000)
		})

		It("announces the change with the LRP before and after", func() {
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Annotation: stringp("new note"), Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2",
			})
			Expect(err).NotTo(HaveOccurred())
			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{"desired_lrp_changed", "rollout_changed", "operation_changed"}))
			op := newestOperation(b, "web")
			expectEvent(events[2], "operation_changed", "web", &models.OperationChangedEvent{Operation: op})
			expectEvent(events[0], "desired_lrp_changed", "web", &models.DesiredLRPChangedEvent{
				Before: withoutDefinition(desired), After: withoutDefinition(updated),
			})
			Expect(updated.ActiveDefinitionId).To(Equal("v2"))
			now := b.clock.Now().UnixNano()
			expectEvent(events[1], "rollout_changed", "web", &models.RolloutChangedEvent{Status: &models.RolloutStatus{
				ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING, Reason: "rolling from v1 to v2",
				ActiveDefinitionId: "v2", HealthyDefinitionId: "v1", Instances: 3,
				Definitions: []*models.DefinitionInstances{{DefinitionId: "v2"}, {DefinitionId: "v1", Instances: 3}},
				StartedAt:   now, ProgressAt: now, DeadlineAt: now + int64(10*time.Minute), OperationId: op.Id,
			}})
		})

		It("announces the instances a scale up adds, on the active definition", func() {
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(5)})
			Expect(err).NotTo(HaveOccurred())
			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{"desired_lrp_changed", "actual_lrp_created", "actual_lrp_created", "operation_changed"}))
			expectEvent(events[0], "desired_lrp_changed", "web", &models.DesiredLRPChangedEvent{
				Before: withoutDefinition(desired), After: withoutDefinition(updated),
			})
			instances := b.instances("web")
			Expect(instances).To(HaveLen(5))
			expectEvent(events[1], "actual_lrp_created", "web", &models.ActualLRPCreatedEvent{ActualLrp: instances[3]})
			expectEvent(events[2], "actual_lrp_created", "web", &models.ActualLRPCreatedEvent{ActualLrp: instances[4]})
		})

		It("announces the UNCLAIMED instances a scale down deletes, not the claimed ones it keeps", func() {
			b.setState("web", 2, models.ActualLRP_CLAIMED, "cell-1")
			before := b.instances("web")

			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(1)})
			Expect(err).NotTo(HaveOccurred())
			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{"desired_lrp_changed", "actual_lrp_removed", "operation_changed"}))
			expectEvent(events[1], "actual_lrp_removed", "web", &models.ActualLRPRemovedEvent{ActualLrp: before[1]})
			Expect(b.instances("web")).To(HaveLen(2))
		})

		It("announces nothing when refused", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Instances:       int32p(9),
				ModificationTag: &models.ModificationTag{Epoch: desired.ModificationTag.Epoch, Index: 7},
			})
			Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
			_, err = b.store.UpdateDesiredLRP(b.ctx, "nope", &models.DesiredLRPUpdate{Instances: int32p(9)})
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(sink.take()).To(BeEmpty())
		})
	})

	Describe("a remove", func() {
		It("announces the LRP, then each UNCLAIMED instance it deletes", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())
			b.setState("web", 0, models.ActualLRP_RUNNING, "cell-1")
			desired := get("web")
			before := b.instances("web")
			sink.take()

			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{"desired_lrp_removed", "actual_lrp_removed", "actual_lrp_removed",
				"rollout_changed", "operation_changed"}))
			expectEvent(events[4], "operation_changed", "web", &models.OperationChangedEvent{Operation: newestOperation(b, "web")})
			expectEvent(events[0], "desired_lrp_removed", "web", &models.DesiredLRPRemovedEvent{DesiredLrp: withoutDefinition(desired)})
			expectEvent(events[1], "actual_lrp_removed", "web", &models.ActualLRPRemovedEvent{ActualLrp: before[1]})
			expectEvent(events[2], "actual_lrp_removed", "web", &models.ActualLRPRemovedEvent{ActualLrp: before[2]})
			// The running instance is left for convergence to stop; the
			// definitions wait for cleanup.
			expectEvent(events[3], "rollout_changed", "web", &models.RolloutChangedEvent{Status: &models.RolloutStatus{
				ProcessGuid: "web", State: models.RolloutStatus_NONE,
				Definitions: []*models.DefinitionInstances{{DefinitionId: "v1", Instances: 1, Running: 0}},
			}})
		})

		It("announces nothing for an unknown LRP", func() {
			Expect(b.store.RemoveDesiredLRP(b.ctx, "nope")).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(sink.take()).To(BeEmpty())
		})
	})

	if b.dialect == sqldb.Postgres {
		It("leaves a desire whose guid a transaction has locked to the transactional path, holding no one's events up", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			_, err = b.store.DesireLRP(b.ctx, newLRP("api", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			sink.take()

			// A removal of web in progress, by hand.
			tx, err := b.conn.BeginTx(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			defer tx.Rollback()
			_, err = tx.ExecContext(b.ctx, "DELETE FROM actual_lrps WHERE process_guid = 'web'")
			Expect(err).NotTo(HaveOccurred())
			_, err = tx.ExecContext(b.ctx, "DELETE FROM run_infos WHERE process_guid = 'web'")
			Expect(err).NotTo(HaveOccurred())
			_, err = tx.ExecContext(b.ctx, "DELETE FROM desired_lrps WHERE process_guid = 'web'")
			Expect(err).NotTo(HaveOccurred())

			desired := make(chan error, 1)
			// The desire brings another definition, so the fast path finds
			// no definition of that id and would go on to insert.
			again := newLRP("web", "apps", 1)
			again.Definition = newDefinition("v2", "/bin/web-v2")
			go func() {
				_, err := b.store.DesireLRP(b.ctx, again)
				desired <- err
			}()
			Consistently(desired).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "the desire waits for the removal")
			_, err = b.store.UpdateDesiredLRP(b.ctx, "api", &models.DesiredLRPUpdate{Annotation: stringp("meanwhile")})
			Expect(err).NotTo(HaveOccurred())
			Eventually(sink.count).Should(Equal(2), "the waiting desire holds no ticket")

			Expect(tx.Commit()).To(Succeed())
			Eventually(desired).Should(Receive(BeNil()))
			events := sink.take()
			Expect(events[0].Type).To(Equal("desired_lrp_changed"))
			Expect(events[1].Type).To(Equal("operation_changed"))
			Expect(events[2].Type).To(Equal("desired_lrp_created"))
			Expect(events[2].Key).To(Equal("web"))
		})
	}

	It("leaves events of one LRP in commit order when its writers race", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		sink.take()

		const writers, updates = 4, 10
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for range updates {
					_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("racing")})
					Expect(err).NotTo(HaveOccurred())
				}
			}()
		}
		wg.Wait()

		events := sink.take()
		Expect(events).To(HaveLen(2 * writers * updates))
		for i := 0; i < len(events); i += 2 {
			commit := i/2 + 1
			changed := events[i].Payload.(*models.DesiredLRPChangedEvent)
			Expect(changed.After.ModificationTag.Index).To(BeEquivalentTo(commit), "event %d is of the %d. commit", i, commit)
			Expect(changed.Before.ModificationTag.Index).To(BeEquivalentTo(commit - 1))
			// Each update's operation follows it, numbered in commit order
			// after the desire's.
			recorded := events[i+1].Payload.(*models.OperationChangedEvent).Operation
			Expect(recorded.Sequence).To(BeEquivalentTo(commit+1), "event %d is of the %d. commit", i+1, commit)
		}
	})
})

// expectCreatedAt checks that events are actual_lrp_created for exactly the
// given indices of instances, in order.
func expectCreatedAt(events []models.Event, instances []*models.ActualLRP, indices ...int32) {
	GinkgoHelper()
	Expect(events).To(HaveLen(2 + len(indices)))
	Expect(events[len(events)-1].Type).To(Equal("operation_changed"))
	Expect(events[0].Type).To(Equal("desired_lrp_created"))
	for i, index := range indices {
		Expect(instances[index].Index).To(Equal(index))
		expectEvent(events[1+i], "actual_lrp_created", instances[index].ProcessGuid,
			&models.ActualLRPCreatedEvent{ActualLrp: instances[index]})
	}
}

// newestOperation is the LRP's newest operation as the store lists it.
func newestOperation(b *board, guid string) *models.Operation {
	GinkgoHelper()
	ops, _, err := b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: guid, Limit: 1})
	Expect(err).NotTo(HaveOccurred())
	Expect(ops).To(HaveLen(1))
	return ops[0]
}

// execIn runs one statement written with ? placeholders in tx.
func execIn(b *board, tx *sql.Tx, query string, args ...any) error {
	_, err := tx.ExecContext(b.ctx, dialect.Rebind(dialect.Name(b.dialect), query), args...)
	return err
}
