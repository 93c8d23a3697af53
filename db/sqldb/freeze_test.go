package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("FreezeDB", func(b *board) {
	var sink *recordingSink

	BeforeEach(func() {
		sink = recordEvents(b)
	})

	xmas := func() *models.FreezeWindow {
		return &models.FreezeWindow{Name: "xmas", From: "2026-12-24T00:00:00Z", Until: "2026-12-27T00:00:00Z"}
	}
	weekend := func() *models.FreezeWindow {
		return &models.FreezeWindow{Name: "weekend", Schedule: "0 18 * * 5", DurationMs: (60 * time.Hour).Milliseconds(), TimeZone: "Europe/Berlin"}
	}
	names := func() []string {
		GinkgoHelper()
		windows, _, err := b.store.FreezeWindows(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		out := []string{}
		for _, w := range windows {
			out = append(out, w.Name)
		}
		return out
	}

	It("adds windows stamped with the board's time, lists them by name and logs freeze_changed", func() {
		now := b.clock.Now().UnixNano()
		added, err := b.store.AddFreezeWindow(b.ctx, xmas(), "alice")
		Expect(err).NotTo(HaveOccurred())
		want := xmas()
		want.CreatedAt = now
		want.RequestedBy = "alice"
		Expect(added).To(EqualProto(want))
		_, err = b.store.AddFreezeWindow(b.ctx, weekend(), "alice")
		Expect(err).NotTo(HaveOccurred())

		windows, _, err := b.store.FreezeWindows(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(windows).To(HaveLen(2))
		Expect(windows[0].Name).To(Equal("weekend"))
		Expect(windows[0].Schedule).To(Equal("0 18 * * 5"))
		Expect(windows[1]).To(EqualProto(want))

		events := sink.take()
		Expect(eventTypes(events)).To(Equal([]string{models.EventFreezeChanged, models.EventFreezeChanged}))
		expectEvent(events[0], models.EventFreezeChanged, "freeze/xmas", &models.FreezeChangedEvent{After: want, RequestedBy: "alice"})
	})

	It("lists names as bytes on every dialect", func() {
		for _, name := range []string{"b", "B", "a b", "Ä"} {
			w := xmas()
			w.Name = name
			_, err := b.store.AddFreezeWindow(b.ctx, w, "alice")
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(names()).To(Equal([]string{"B", "a b", "b", "Ä"}))
	})

	It("refuses a name already stored with ResourceExists, and changes nothing", func() {
		_, err := b.store.AddFreezeWindow(b.ctx, xmas(), "alice")
		Expect(err).NotTo(HaveOccurred())
		sink.take()
		again := weekend()
		again.Name = "xmas"
		_, err = b.store.AddFreezeWindow(b.ctx, again, "alice")
		Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_ResourceExists))
		Expect(err).To(MatchError(ContainSubstring(`freeze window "xmas" already exists`)))
		windows, _, err := b.store.FreezeWindows(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(windows).To(HaveLen(1))
		Expect(windows[0].Schedule).To(BeEmpty(), "the first window stays")
		Expect(sink.take()).To(BeEmpty())
	})

	It("refuses an invalid window naming the field, and stores nothing", func() {
		bad := weekend()
		bad.TimeZone = "Mars/Base"
		_, err := b.store.AddFreezeWindow(b.ctx, bad, "alice")
		Expect(err).To(MatchError(models.ErrInvalidField("window.time_zone", `unknown time zone "Mars/Base" (an IANA name such as Europe/Berlin)`)))
		Expect(b.count("SELECT COUNT(*) FROM freeze_windows")).To(BeZero())
	})

	It("removes a window and logs freeze_changed; an unknown one is ResourceNotFound", func() {
		added, err := b.store.AddFreezeWindow(b.ctx, xmas(), "alice")
		Expect(err).NotTo(HaveOccurred())
		sink.take()
		Expect(b.store.RemoveFreezeWindow(b.ctx, "xmas", "bob")).To(Succeed())
		Expect(names()).To(BeEmpty())
		events := sink.take()
		Expect(eventTypes(events)).To(Equal([]string{models.EventFreezeChanged}))
		expectEvent(events[0], models.EventFreezeChanged, "freeze/xmas", &models.FreezeChangedEvent{Before: added, RequestedBy: "bob"})

		err = b.store.RemoveFreezeWindow(b.ctx, "xmas", "bob")
		Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_ResourceNotFound))
		Expect(sink.take()).To(BeEmpty())
	})

	It("leaves freeze events out of the LRPs the convergence feed names", func() {
		from, err := b.store.ConvergenceMark(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.AddFreezeWindow(b.ctx, xmas(), "alice")
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		upTo, err := b.store.ConvergenceMark(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		guids, lost, err := b.store.ConvergenceChanges(b.ctx, from.LogHead, upTo.LogHead)
		Expect(err).NotTo(HaveOccurred())
		Expect(lost).To(BeFalse())
		Expect(guids).To(Equal([]string{"web"}))
	})

	Describe("the freeze exemption of a rollout", func() {
		BeforeEach(func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(time.Second)
			sink.take()
		})

		exemption := func() string {
			GinkgoHelper()
			snapshot, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot.Rollouts).To(HaveLen(1))
			st, err := b.store.RolloutStatus(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(st.FreezeExemption).To(Equal(snapshot.Rollouts[0].FreezeExemption), "the status says what the planner reads")
			return st.FreezeExemption
		}

		It("is empty for an update, and \"override\" for one that overrides the freeze, which its operation records with the reason", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-v2"), UpdateIdentifier: "v2",
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(exemption()).To(BeEmpty())

			b.clock.Advance(time.Second)
			_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-v3"), UpdateIdentifier: "v3",
				OverrideFreeze: true, OverrideReason: "hotfix for INC-42",
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(exemption()).To(Equal(models.FreezeExemptOverride))
			Expect(b.count("SELECT COUNT(*) FROM rollouts WHERE freeze_exemption = 'override'")).To(Equal(1))

			op := newestOperation(b, "web")
			Expect(op.Kind).To(Equal(models.Operation_UPDATE_DEFINITION))
			var request models.UpdateDesiredLRPRequest
			Expect(op.Parameters.UnmarshalTo(&request)).To(Succeed())
			Expect(request.Update.OverrideFreeze).To(BeTrue())
			Expect(request.Update.OverrideReason).To(Equal("hotfix for INC-42"))
			Expect(op.History[0].Message).To(ContainSubstring("overrides any freeze window: hotfix for INC-42"))
		})

		It("is \"revert\" for a rollback and an abort", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-v2"), UpdateIdentifier: "v2",
			})
			Expect(err).NotTo(HaveOccurred())
			_, err = b.store.AbortRollout(b.ctx, "web", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(exemption()).To(Equal(models.FreezeExemptRevert))

			_, err = b.store.Rollback(b.ctx, "web", "v2", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(exemption()).To(Equal(models.FreezeExemptRevert))
		})
	})
})
