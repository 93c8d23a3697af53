package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// autoscalingSettings is roomOccupancy autoscaling, enabled, with these
// bounds and a ready target of 0.5.
func autoscalingSettings(least, most int32) *models.Autoscaling {
	return &models.Autoscaling{
		Enabled: true, Min: least, Max: most,
		Policy: &models.AutoscalingPolicy{
			Type: models.RoomOccupancyPolicy,
			Parameters: &models.AutoscalingPolicyParameters{
				RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: 0.5},
			},
		},
	}
}

// autoscalingSpecs is what the autoscaling specs share: a store that
// records its events, and short ways to desire, read and update.
type autoscalingSpecs struct {
	b      *board
	events *recordedEvents
	store  *sqldb.SQLDB
}

func newAutoscalingSpecs(b *board) *autoscalingSpecs {
	s := &autoscalingSpecs{b: b}
	BeforeEach(func() {
		s.events = &recordedEvents{}
		s.store = newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(s.events))
	})
	return s
}

func (s *autoscalingSpecs) now() int64 { return s.b.clock.Now().UnixNano() }

func (s *autoscalingSpecs) desire(lrp *models.DesiredLRP) *models.DesiredLRP {
	GinkgoHelper()
	stored, err := s.store.DesireLRP(s.b.ctx, lrp)
	Expect(err).NotTo(HaveOccurred())
	return stored
}

func (s *autoscalingSpecs) get(guid string) *models.DesiredLRP {
	GinkgoHelper()
	lrp, err := s.store.DesiredLRPByProcessGuid(s.b.ctx, guid)
	Expect(err).NotTo(HaveOccurred())
	return lrp
}

func (s *autoscalingSpecs) update(u *models.DesiredLRPUpdate) *models.DesiredLRP {
	GinkgoHelper()
	lrp, err := s.store.UpdateDesiredLRP(s.b.ctx, "web", u)
	Expect(err).NotTo(HaveOccurred())
	return lrp
}

func (s *autoscalingSpecs) operations(guid string) []*models.Operation {
	GinkgoHelper()
	ops, _, err := s.store.Operations(s.b.ctx, db.OperationFilter{ProcessGuid: guid})
	Expect(err).NotTo(HaveOccurred())
	return ops
}

// schedule is the LRP as a targeted snapshot reads it.
func (s *autoscalingSpecs) schedule(guid string) convergence.DesiredSchedule {
	GinkgoHelper()
	snap, err := s.store.ConvergenceSnapshot(s.b.ctx, []string{guid})
	Expect(err).NotTo(HaveOccurred())
	Expect(snap.Desired).To(HaveLen(1))
	return snap.Desired[0]
}

// autoscaled is newLRP with autoscaling a.
func autoscaled(guid string, instances int32, a *models.Autoscaling) *models.DesiredLRP {
	lrp := newLRP(guid, "apps", instances)
	lrp.Autoscaling = a
	return lrp
}

// seeded is the autoscaler's state wanting wanted since at.
func seeded(wanted int32, at int64) *models.AutoscalerStatus {
	return &models.AutoscalerStatus{Recommendations: []*models.AutoscalerRecommendation{{At: at, Wanted: wanted}}}
}

// historyLines are an operation's history messages.
func historyLines(op *models.Operation) []string {
	var lines []string
	for _, e := range op.History {
		lines = append(lines, e.Message)
	}
	return lines
}

// Autoscaling in storage (DESIGN §7): settings on desire and update, the
// instance count they decide, and what reads and the snapshot return.
var _ = forEachDialect("autoscaling", func(b *board) {
	s := newAutoscalingSpecs(b)
	now, desire, get, update, operations, schedule := s.now, s.desire, s.get, s.update, s.operations, s.schedule
	messages := historyLines

	Describe("a desire with autoscaling", func() {
		It("stores instances clamped into the bounds, 0 becoming min, and seeds the autoscaler with them", func() {
			stored := desire(autoscaled("web", 0, autoscalingSettings(2, 10)))
			Expect(stored.Instances).To(BeEquivalentTo(2))
			Expect(stored.Autoscaling).To(EqualProto(autoscalingSettings(2, 10)))
			Expect(stored.Autoscaler).To(EqualProto(seeded(2, now())))
			Expect(b.instances("web")).To(HaveLen(2))

			lrp := get("web")
			Expect(lrp.Instances).To(BeEquivalentTo(2))
			Expect(lrp.Autoscaling).To(EqualProto(autoscalingSettings(2, 10)))
			Expect(lrp.Autoscaler).To(EqualProto(seeded(2, now())))

			listed, err := s.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(listed).To(HaveLen(1))
			Expect(listed[0]).To(EqualProto(lrp))

			infos, err := s.store.DesiredLRPSchedulingInfos(b.ctx, db.DesiredLRPFilter{ProcessGuids: []string{"web"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(infos).To(HaveLen(1))
			Expect(infos[0].Instances).To(BeEquivalentTo(2))
			Expect(infos[0].Autoscaling).To(EqualProto(autoscalingSettings(2, 10)))

			d := schedule("web")
			Expect(d.Instances).To(BeEquivalentTo(2))
			Expect(d.Autoscaling).To(EqualProto(autoscalingSettings(2, 10)))
			Expect(d.Autoscaler).To(EqualProto(seeded(2, now())))
			Expect(d.ModificationIndex).To(BeZero())

			ops := operations("web")
			Expect(ops).To(HaveLen(1))
			Expect(messages(ops[0])).To(Equal([]string{
				"desired 2 instances of definition v1; autoscaling enabled: min 2, max 10, ready_target 0.5"}))
		})

		It("clamps instances above max down to it", func() {
			Expect(desire(autoscaled("web", 15, autoscalingSettings(2, 10))).Instances).To(BeEquivalentTo(10))
			Expect(get("web").Instances).To(BeEquivalentTo(10))
			Expect(get("web").Autoscaler).To(EqualProto(seeded(10, now())))
		})

		It("keeps instances inside the bounds, and max -1 means no limit", func() {
			Expect(desire(autoscaled("web", 5, autoscalingSettings(2, 10))).Instances).To(BeEquivalentTo(5))
			Expect(desire(autoscaled("api", 500, autoscalingSettings(2, -1))).Instances).To(BeEquivalentTo(500))
		})

		It("stores disabled settings as they are, instances as desired and no autoscaler", func() {
			off := autoscalingSettings(0, 0)
			off.Enabled = false
			stored := desire(autoscaled("web", 0, off))
			Expect(stored.Instances).To(BeZero())
			Expect(stored.Autoscaler).To(BeNil())
			lrp := get("web")
			Expect(lrp.Autoscaling).To(EqualProto(off))
			Expect(lrp.Autoscaler).To(BeNil())
			Expect(schedule("web").Autoscaler).To(BeNil())
		})

		It("ignores an autoscaler state sent with the desire: it is the board's", func() {
			lrp := autoscaled("web", 3, autoscalingSettings(2, 10))
			lrp.Autoscaler = seeded(9, 1)
			Expect(desire(lrp).Autoscaler).To(EqualProto(seeded(3, now())))
			plain := newLRP("api", "apps", 1)
			plain.Autoscaler = seeded(9, 1)
			Expect(desire(plain).Autoscaler).To(BeNil())
			Expect(get("api").Autoscaler).To(BeNil())
		})

		It("reads nothing for LRPs without autoscaling", func() {
			desire(newLRP("web", "apps", 2))
			lrp := get("web")
			Expect(lrp.Autoscaling).To(BeNil())
			Expect(lrp.Autoscaler).To(BeNil())
			d := schedule("web")
			Expect(d.Autoscaling).To(BeNil())
			Expect(d.Autoscaler).To(BeNil())
		})

		It("shares one decoded settings message between LRPs with equal settings in the snapshot", func() {
			desire(autoscaled("api", 1, autoscalingSettings(2, 10)))
			desire(autoscaled("web", 1, autoscalingSettings(2, 10)))
			snap, err := s.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(snap.Desired).To(HaveLen(2))
			Expect(snap.Desired[0].Autoscaling).To(BeIdenticalTo(snap.Desired[1].Autoscaling))
		})
	})

	Describe("validation", func() {
		invalid := []struct {
			name    string
			change  func(a *models.Autoscaling)
			field   string
			message string
		}{
			{"min 0", func(a *models.Autoscaling) { a.Min = 0 },
				"autoscaling.min", "disable autoscaling and set instances to 0"},
			{"max not above min", func(a *models.Autoscaling) { a.Max = 2 },
				"autoscaling.max", "must be greater than min (2)"},
			{"ready_target 0.05", func(a *models.Autoscaling) { a.Policy.Parameters.RoomOccupancy.ReadyTarget = 0.05 },
				"autoscaling.policy.parameters.room_occupancy.ready_target", "must be between 0.1 and 0.9, got 0.05"},
			{"ready_target 0.95", func(a *models.Autoscaling) { a.Policy.Parameters.RoomOccupancy.ReadyTarget = 0.95 },
				"autoscaling.policy.parameters.room_occupancy.ready_target", "must be between 0.1 and 0.9, got 0.95"},
			{"another policy type", func(a *models.Autoscaling) { a.Policy.Type = "cpu" },
				"autoscaling.policy.type", `must be "roomOccupancy", got "cpu"`},
		}
		for _, c := range invalid {
			It("refuses a desire with "+c.name+", naming the field, and writes nothing", func() {
				a := autoscalingSettings(2, 10)
				c.change(a)
				_, err := s.store.DesireLRP(b.ctx, autoscaled("web", 2, a))
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
				Expect(models.ConvertError(err).GetMessage()).To(HavePrefix("desired_lrp." + c.field + ": "))
				Expect(err.Error()).To(ContainSubstring(c.message))
				Expect(b.count("SELECT COUNT(*) FROM desired_lrps")).To(BeZero())
				Expect(b.count("SELECT COUNT(*) FROM actual_lrps")).To(BeZero())
				Expect(b.count("SELECT COUNT(*) FROM operations")).To(BeZero())
				Expect(s.events.all()).To(BeEmpty())
			})

			It("refuses an update with "+c.name+", naming the field, and changes nothing", func() {
				desire(newLRP("web", "apps", 1))
				before := get("web")
				a := autoscalingSettings(2, 10)
				c.change(a)
				_, err := s.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Autoscaling: a})
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
				Expect(models.ConvertError(err).GetMessage()).To(HavePrefix("update." + c.field + ": "))
				Expect(err.Error()).To(ContainSubstring(c.message))
				Expect(get("web")).To(EqualProto(before))
				Expect(operations("web")).To(HaveLen(1))
			})
		}
	})

	Describe("updates", func() {
		refusal := models.ErrInvalidField("update.instances", models.ErrInstancesAutoscaled).Error()

		It("refuses instances while autoscaling is enabled, writing nothing, not even an operation", func() {
			desire(autoscaled("web", 3, autoscalingSettings(2, 10)))
			before := get("web")
			s.events.take()
			for _, u := range []*models.DesiredLRPUpdate{
				{Instances: int32p(5)},
				{Instances: int32p(5), Annotation: stringp("more")},
				{Instances: int32p(5), Autoscaling: autoscalingSettings(1, 20)},
				{Instances: int32p(5), Definition: newDefinition("", "/bin/web-v2"), UpdateIdentifier: "v2", Queue: true},
			} {
				_, err := s.store.UpdateDesiredLRP(b.ctx, "web", u)
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
				Expect(err.Error()).To(Equal(refusal))
			}
			Expect(get("web")).To(EqualProto(before))
			Expect(operations("web")).To(HaveLen(1))
			Expect(b.count("SELECT COUNT(*) FROM run_infos")).To(Equal(1))
			Expect(s.events.all()).To(BeEmpty())
		})

		It("refuses instances with settings that enable autoscaling", func() {
			desire(newLRP("web", "apps", 1))
			before := get("web")
			_, err := s.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Instances: int32p(4), Autoscaling: autoscalingSettings(2, 10)})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(Equal(refusal))
			Expect(get("web")).To(EqualProto(before))
		})

		It("enables autoscaling: instances clamped into the bounds, the autoscaler seeded, the tag moved on", func() {
			desire(newLRP("web", "apps", 1))
			before := get("web")
			b.clock.Advance(time.Minute)
			s.events.take()
			after := update(&models.DesiredLRPUpdate{Autoscaling: autoscalingSettings(3, 10)})
			Expect(after.Instances).To(BeEquivalentTo(3))
			Expect(after.Autoscaling).To(EqualProto(autoscalingSettings(3, 10)))
			Expect(after.Autoscaler).To(EqualProto(seeded(3, now())))
			Expect(after.ModificationTag.Index).To(Equal(before.ModificationTag.Index + 1))
			Expect(b.instances("web")).To(HaveLen(3))
			Expect(schedule("web").ModificationIndex).To(BeEquivalentTo(after.ModificationTag.Index))

			Expect(eventTypes(s.events.all())).To(Equal([]string{models.EventDesiredLRPChanged,
				models.EventActualLRPCreated, models.EventActualLRPCreated, models.EventOperationChanged}))
			op := operations("web")[0]
			Expect(op.Kind).To(Equal(models.Operation_UPDATE))
			Expect(messages(op)).To(Equal([]string{"autoscaling enabled: min 3, max 10, ready_target 0.5; instances 1 → 3"}))
		})

		It("enables autoscaling from 0 instances at min", func() {
			desire(newLRP("web", "apps", 0))
			Expect(update(&models.DesiredLRPUpdate{Autoscaling: autoscalingSettings(2, -1)}).Instances).To(BeEquivalentTo(2))
		})

		It("changes the settings while enabled: instances clamped into the new bounds, the autoscaler kept", func() {
			desire(autoscaled("web", 4, autoscalingSettings(2, 10)))
			seededAt := now()
			b.clock.Advance(time.Minute)
			after := update(&models.DesiredLRPUpdate{Autoscaling: autoscalingSettings(1, 2)})
			Expect(after.Instances).To(BeEquivalentTo(2))
			Expect(after.Autoscaling).To(EqualProto(autoscalingSettings(1, 2)))
			Expect(after.Autoscaler).To(EqualProto(seeded(4, seededAt)))
			Expect(b.instances("web")).To(HaveLen(2))
			Expect(messages(operations("web")[0])).To(Equal([]string{
				"autoscaling settings replaced: min 1, max 2, ready_target 0.5; instances 4 → 2"}))

			// Within the bounds, instances stay.
			after = update(&models.DesiredLRPUpdate{Autoscaling: autoscalingSettings(1, 5)})
			Expect(after.Instances).To(BeEquivalentTo(2))
			Expect(after.Autoscaler).To(EqualProto(seeded(4, seededAt)))
		})

		It("disables autoscaling: instances kept, the autoscaler cleared, instances settable again", func() {
			desire(autoscaled("web", 4, autoscalingSettings(2, 10)))
			off := autoscalingSettings(2, 10)
			off.Enabled = false
			after := update(&models.DesiredLRPUpdate{Autoscaling: off})
			Expect(after.Instances).To(BeEquivalentTo(4))
			Expect(after.Autoscaling).To(EqualProto(off))
			Expect(after.Autoscaler).To(BeNil())
			Expect(schedule("web").Autoscaler).To(BeNil())
			Expect(messages(operations("web")[0])).To(Equal([]string{"autoscaling disabled"}))

			Expect(update(&models.DesiredLRPUpdate{Instances: int32p(6)}).Instances).To(BeEquivalentTo(6))
		})

		It("disables autoscaling and sets instances in one update", func() {
			desire(autoscaled("web", 4, autoscalingSettings(2, 10)))
			after := update(&models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{Enabled: false}, Instances: int32p(0)})
			Expect(after.Instances).To(BeZero())
			Expect(after.Autoscaler).To(BeNil())
			Expect(b.instances("web")).To(BeEmpty())
			Expect(messages(operations("web")[0])).To(Equal([]string{"autoscaling disabled; instances 4 → 0"}))
		})

		It("leaves the settings alone when an update does not set them", func() {
			desire(autoscaled("web", 4, autoscalingSettings(2, 10)))
			lrp := update(&models.DesiredLRPUpdate{Annotation: stringp("note")})
			Expect(lrp.Instances).To(BeEquivalentTo(4))
			Expect(lrp.Autoscaling).To(EqualProto(autoscalingSettings(2, 10)))
			Expect(lrp.Autoscaler).To(EqualProto(seeded(4, now())))
		})
	})
})
