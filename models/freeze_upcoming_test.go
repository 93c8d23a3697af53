package models_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("FreezeUpcoming", func() {
	const now = "2026-10-24T12:00:00Z" // a Saturday; Berlin falls back on the 25th at 01:00Z
	// occurrence is a window's expected next occurrence; "" start for none.
	DescribeTable("each window's next occurrence within the horizon",
		func(w *models.FreezeWindow, at0, wantStart, wantEnd string) {
			got := models.FreezeUpcoming([]*models.FreezeWindow{w}, at(at0), models.FreezeUpcomingHorizon)
			if wantStart == "" {
				Expect(got).To(BeEmpty())
				return
			}
			Expect(got).To(HaveLen(1))
			Expect(got[0].GetName()).To(Equal(w.GetName()))
			Expect(time.Unix(0, got[0].GetStartsAt()).UTC()).To(Equal(at(wantStart).UTC()), "starts")
			Expect(time.Unix(0, got[0].GetEndsAt()).UTC()).To(Equal(at(wantEnd).UTC()), "ends")
		},
		Entry("1. a one-off later today", oneOff("x", "2026-10-24T18:00:00Z", "2026-10-24T20:00:00Z"), now,
			"2026-10-24T18:00:00Z", "2026-10-24T20:00:00Z"),
		Entry("2. a one-off active now is not upcoming", oneOff("x", "2026-10-24T10:00:00Z", "2026-10-24T13:00:00Z"), now, "", ""),
		Entry("3. fall back: the first of the two 02:30s (CEST)", recurring("x", "30 2 * * *", time.Hour, "Europe/Berlin"), now,
			"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"),
		Entry("4. Monday 09:00 in New York, still on EDT", recurring("x", "0 9 * * 1", 2*time.Hour, "America/New_York"), now,
			"2026-10-26T13:00:00Z", "2026-10-26T15:00:00Z"),
		Entry("5. New Year is more than a week away", recurring("x", "0 0 1 1 *", time.Hour, "UTC"), now, "", ""),
		Entry("spring forward: 02:30 Berlin does not exist, the window starts at the jump (01:00Z)",
			recurring("x", "30 2 * * *", time.Hour, "Europe/Berlin"), "2026-03-28T12:00:00Z",
			"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"),
		Entry("a recurring window active now: its next occurrence, a day later", recurring("x", "0 11 * * *", 2*time.Hour, "UTC"), now,
			"2026-10-25T11:00:00Z", "2026-10-25T13:00:00Z"),
		Entry("a one-off past", oneOff("x", "2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z"), now, "", ""),
		Entry("a one-off past the horizon", oneOff("x", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"), now, "", ""),
	)

	It("lists every window's next occurrence in start order, then by name", func() {
		got := models.FreezeUpcoming([]*models.FreezeWindow{
			recurring("nightly", "0 22 * * *", time.Hour, ""),
			oneOff("launch", "2026-10-24T18:00:00Z", "2026-10-24T20:00:00Z"),
			oneOff("also-launch", "2026-10-24T18:00:00Z", "2026-10-24T19:00:00Z"),
		}, at(now), models.FreezeUpcomingHorizon)
		var names []string
		for _, o := range got {
			names = append(names, o.GetName())
		}
		Expect(names).To(Equal([]string{"also-launch", "launch", "nightly"}))
	})
})
