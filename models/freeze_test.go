package models_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

func at(text string) time.Time {
	t, err := time.Parse(time.RFC3339, text)
	Expect(err).NotTo(HaveOccurred())
	return t
}

func recurring(name, schedule string, duration time.Duration, zone string) *models.FreezeWindow {
	return &models.FreezeWindow{Name: name, Schedule: schedule, DurationMs: duration.Milliseconds(), TimeZone: zone}
}

func oneOff(name, from, until string) *models.FreezeWindow {
	return &models.FreezeWindow{Name: name, From: from, Until: until}
}

var _ = Describe("FreezeActive", func() {
	// until "" means no window is active.
	DescribeTable("which window is active, and until when",
		func(windows []*models.FreezeWindow, now, wantName, wantUntil string) {
			active, until := models.FreezeActive(windows, at(now))
			if wantName == "" {
				Expect(active).To(BeNil())
				Expect(until.IsZero()).To(BeTrue())
				return
			}
			Expect(active).NotTo(BeNil())
			Expect(active.GetName()).To(Equal(wantName))
			Expect(until.UTC()).To(Equal(at(wantUntil).UTC()))
		},
		// One-off windows: from included, until excluded.
		Entry("1. one-off covering now", []*models.FreezeWindow{oneOff("x", "2026-03-29T00:00:00Z", "2026-03-29T02:00:00Z")},
			"2026-03-29T01:15:00Z", "x", "2026-03-29T02:00:00Z"),
		Entry("2. one-off starting now", []*models.FreezeWindow{oneOff("x", "2026-03-29T01:15:00Z", "2026-03-29T02:00:00Z")},
			"2026-03-29T01:15:00Z", "x", "2026-03-29T02:00:00Z"),
		Entry("3. one-off ending now", []*models.FreezeWindow{oneOff("x", "2026-03-29T00:00:00Z", "2026-03-29T01:15:00Z")},
			"2026-03-29T01:15:00Z", "", ""),
		Entry("one-off in the future", []*models.FreezeWindow{oneOff("x", "2026-04-01T00:00:00Z", "2026-04-02T00:00:00Z")},
			"2026-03-29T01:15:00Z", "", ""),
		Entry("one-off with offsets", []*models.FreezeWindow{oneOff("x", "2026-12-24T18:00:00+01:00", "2026-12-27T08:00:00+01:00")},
			"2026-12-24T17:00:00Z", "x", "2026-12-27T07:00:00Z"),

		// Recurring, UTC.
		Entry("5. Sundays at midnight for 2h, UTC by default", []*models.FreezeWindow{recurring("x", "0 0 * * 0", 2*time.Hour, "")},
			"2026-03-29T01:15:00Z", "x", "2026-03-29T02:00:00Z"),
		Entry("Sunday 0 and 7 are the same day", []*models.FreezeWindow{recurring("x", "0 0 * * 7", 2*time.Hour, "UTC")},
			"2026-03-29T01:15:00Z", "x", "2026-03-29T02:00:00Z"),
		Entry("a weekend, Friday 18:00 for 60h, on Sunday", []*models.FreezeWindow{recurring("x", "0 18 * * 5", 60*time.Hour, "")},
			"2026-03-29T12:00:00Z", "x", "2026-03-30T06:00:00Z"),
		Entry("the weekend is over on Monday 06:00", []*models.FreezeWindow{recurring("x", "0 18 * * 5", 60*time.Hour, "")},
			"2026-03-30T06:00:00Z", "", ""),
		Entry("steps and ranges: 10 min every quarter hour 9-17 on weekdays, at 10:01", []*models.FreezeWindow{recurring("x", "*/15 9-17 * * 1-5", 10*time.Minute, "")},
			"2026-03-30T10:01:00Z", "x", "2026-03-30T10:10:00Z"),
		Entry("…and not at 09:56", []*models.FreezeWindow{recurring("x", "*/15 9-17 * * 1-5", 10*time.Minute, "")},
			"2026-03-30T09:56:00Z", "", ""),
		Entry("…nor on a Sunday", []*models.FreezeWindow{recurring("x", "*/15 9-17 * * 1-5", 10*time.Minute, "")},
			"2026-03-29T10:01:00Z", "", ""),
		Entry("both day fields restricted: a Friday not the 13th matches", []*models.FreezeWindow{recurring("x", "0 0 13 * 5", 24*time.Hour, "")},
			"2026-03-06T12:00:00Z", "x", "2026-03-07T00:00:00Z"),
		Entry("both day fields restricted: a Tuesday the 13th matches", []*models.FreezeWindow{recurring("x", "0 0 13 * 5", 24*time.Hour, "")},
			"2026-10-13T12:00:00Z", "x", "2026-10-14T00:00:00Z"),
		Entry("both day fields restricted: Wednesday the 14th does not", []*models.FreezeWindow{recurring("x", "0 0 13 * 5", 24*time.Hour, "")},
			"2026-10-14T12:00:00Z", "", ""),
		Entry("only day-of-month restricted: the 13th must be a 13th", []*models.FreezeWindow{recurring("x", "0 0 13 * *", 24*time.Hour, "")},
			"2026-03-06T12:00:00Z", "", ""),
		Entry("month list: December only", []*models.FreezeWindow{recurring("x", "0 0 * 12 *", 24*time.Hour, "")},
			"2026-11-30T12:00:00Z", "", ""),

		// Recurring in a time zone, with daylight saving time. Berlin
		// jumps from 02:00 CET to 03:00 CEST at 01:00Z on 2026-03-29, and
		// back from 03:00 CEST to 02:00 CET at 01:00Z on 2026-10-25.
		Entry("an ordinary summer Friday in Berlin: 22:00 CEST is 20:00Z", []*models.FreezeWindow{recurring("x", "0 22 * * 5", time.Hour, "Europe/Berlin")},
			"2026-07-03T20:30:00Z", "x", "2026-07-03T21:00:00Z"),
		Entry("…and a winter one: 22:00 CET is 21:00Z", []*models.FreezeWindow{recurring("x", "0 22 * * 5", time.Hour, "Europe/Berlin")},
			"2026-01-09T21:30:00Z", "x", "2026-01-09T22:00:00Z"),
		Entry("…not before 21:00Z in winter", []*models.FreezeWindow{recurring("x", "0 22 * * 5", time.Hour, "Europe/Berlin")},
			"2026-01-09T20:30:00Z", "", ""),
		Entry("4. spring forward: 02:30 does not exist, the window starts at the jump (03:00 CEST, 01:00Z)",
			[]*models.FreezeWindow{recurring("x", "30 2 * * *", time.Hour, "Europe/Berlin")},
			"2026-03-29T01:00:00Z", "x", "2026-03-29T02:00:00Z"),
		Entry("spring forward: not before the jump", []*models.FreezeWindow{recurring("x", "30 2 * * *", time.Hour, "Europe/Berlin")},
			"2026-03-29T00:59:00Z", "", ""),
		Entry("spring forward: a 2h window from 01:30 CET lasts real time, to 04:30 CEST",
			[]*models.FreezeWindow{recurring("x", "30 1 * * *", 2*time.Hour, "Europe/Berlin")},
			"2026-03-29T02:00:00Z", "x", "2026-03-29T02:30:00Z"),
		Entry("fall back: 02:30 happens twice, the window starts at the first (02:30 CEST, 00:30Z)",
			[]*models.FreezeWindow{recurring("x", "30 2 * * *", time.Hour, "Europe/Berlin")},
			"2026-10-25T00:30:00Z", "x", "2026-10-25T01:30:00Z"),
		Entry("fall back: the second 02:30 (CET, 01:30Z) starts nothing",
			[]*models.FreezeWindow{recurring("x", "30 2 * * *", time.Hour, "Europe/Berlin")},
			"2026-10-25T01:45:00Z", "", ""),
		Entry("fall back: the day after, 02:30 CET is 01:30Z",
			[]*models.FreezeWindow{recurring("x", "30 2 * * *", time.Hour, "Europe/Berlin")},
			"2026-10-26T01:45:00Z", "x", "2026-10-26T02:30:00Z"),
		Entry("a zone east of UTC whose local date is ahead: Tokyo Monday 08:00 is Sunday 23:00Z",
			[]*models.FreezeWindow{recurring("x", "0 8 * * 1", time.Hour, "Asia/Tokyo")},
			"2026-03-29T23:30:00Z", "x", "2026-03-30T00:00:00Z"),

		// Several windows.
		Entry("6. several active: the one ending last", []*models.FreezeWindow{
			oneOff("a", "2026-03-29T00:00:00Z", "2026-03-29T02:00:00Z"),
			oneOff("b", "2026-03-29T01:00:00Z", "2026-03-29T05:00:00Z"),
			recurring("c", "0 0 * * 0", 2*time.Hour, ""),
		}, "2026-03-29T01:15:00Z", "b", "2026-03-29T05:00:00Z"),
		Entry("several ending together: the first by name, whatever the order", []*models.FreezeWindow{
			oneOff("c", "2026-03-29T00:00:00Z", "2026-03-29T02:00:00Z"),
			recurring("b", "0 0 * * 0", 2*time.Hour, ""),
			recurring("a", "30 2 * * *", time.Hour, "Europe/Berlin"),
		}, "2026-03-29T01:15:00Z", "a", "2026-03-29T02:00:00Z"),
		Entry("an invalid window is never active", []*models.FreezeWindow{
			recurring("a", "61 * * * *", time.Hour, ""),
			recurring("b", "* * * * *", time.Hour, "Mars/Base"),
			oneOff("c", "yesterday", "tomorrow"),
		}, "2026-03-29T01:15:00Z", "", ""),
		Entry("no windows", []*models.FreezeWindow{}, "2026-03-29T01:15:00Z", "", ""),
	)

	It("is fast enough for every pass: a window of every minute for a week", func() {
		windows := []*models.FreezeWindow{recurring("x", "* * * * *", models.MaxFreezeDuration, "Europe/Berlin")}
		started := time.Now()
		active, until := models.FreezeActive(windows, at("2026-03-29T01:15:00Z"))
		Expect(active).NotTo(BeNil())
		Expect(until.UTC()).To(Equal(at("2026-04-05T01:15:00Z")))
		Expect(time.Since(started)).To(BeNumerically("<", 100*time.Millisecond))
	})
})

var _ = Describe("ParseCron", func() {
	DescribeTable("refuses a bad schedule, naming the field",
		func(spec, want string) {
			_, err := models.ParseCron(spec)
			Expect(err).To(MatchError(want))
		},
		Entry(nil, "* * * *", "must have 5 fields (minute hour day-of-month month day-of-week), got 4"),
		Entry(nil, "61 * * * *", `minute field "61": "61" is outside 0-59`),
		Entry(nil, "* 24 * * *", `hour field "24": "24" is outside 0-23`),
		Entry(nil, "* * 0 * *", `day-of-month field "0": "0" is outside 1-31`),
		Entry(nil, "* * * 13 *", `month field "13": "13" is outside 1-12`),
		Entry(nil, "* * * * 8", `day-of-week field "8": "8" is outside 0-7`),
		Entry(nil, "*/0 * * * *", `minute field "*/0": step "0" must be a whole number of at least 1`),
		Entry(nil, "5-1 * * * *", `minute field "5-1": range "5-1" must not run backwards`),
		Entry(nil, "1/5 * * * *", `minute field "1/5": a step needs * or a range before it, got "1/5"`),
		Entry(nil, "* * * * MON", `day-of-week field "MON": "MON" is not *, a number, a range or a step`),
		Entry(nil, "1,,2 * * * *", `minute field "1,,2": "" is not *, a number, a range or a step`),
		Entry(nil, "-1 * * * *", `minute field "-1": range "-1" must be two numbers a-b`),
	)

	It("accepts lists, ranges and steps", func() {
		for _, spec := range []string{"0,30 9-17/2 1-7 1,6,12 1-5", "*/5 * * * *", "0 0 * * 0-7/7", "  0   0 * *  *  "} {
			_, err := models.ParseCron(spec)
			Expect(err).NotTo(HaveOccurred(), spec)
		}
	})
})

var _ = Describe("FreezeHolds", func() {
	DescribeTable("which rollouts a freeze holds",
		func(state models.RolloutStatus_State, exemption string, want bool) {
			Expect(models.FreezeHolds(state, exemption)).To(Equal(want))
		},
		Entry("1. an update's rollout", models.RolloutStatus_PROGRESSING, "", true),
		Entry("2. a staged rollout holding", models.RolloutStatus_HOLDING, "", false),
		Entry("a held rollout", models.RolloutStatus_HELD, "", false),
		Entry("a failed rollout", models.RolloutStatus_FAILED, "", false),
		Entry("3. an auto-revert", models.RolloutStatus_REVERTED, "", false),
		Entry("4. a rollback or an abort", models.RolloutStatus_PROGRESSING, models.FreezeExemptRevert, false),
		Entry("5. an update overriding the freeze", models.RolloutStatus_PROGRESSING, models.FreezeExemptOverride, false),
	)

	It("says why in the reason, in UTC, and takes it off again", func() {
		frozen := models.FrozenReason("rolling from v1 to v2", "xmas", at("2026-12-27T08:00:00+01:00"))
		Expect(frozen).To(Equal("rolling from v1 to v2; frozen by xmas until 2026-12-27T07:00:00Z"))
		again := models.FrozenReason(frozen, "weekend", at("2026-12-28T06:00:00Z"))
		Expect(again).To(Equal("rolling from v1 to v2; frozen by weekend until 2026-12-28T06:00:00Z"))
		Expect(models.ThawedReason(again)).To(Equal("rolling from v1 to v2"))
		Expect(models.ThawedReason("rolling from v1 to v2")).To(Equal("rolling from v1 to v2"))
	})
})

var _ = Describe("freeze window validation", func() {
	DescribeTable("refuses a bad window, naming the field",
		func(w *models.FreezeWindow, want string) {
			err := (&models.AddFreezeWindowRequest{Window: w}).Validate()
			Expect(err).To(MatchError(&models.Error{Type: models.Error_InvalidRequest, Message: want}))
		},
		Entry("no window", nil, "window: required"),
		Entry("no name", recurring("", "0 0 * * *", time.Hour, ""), "window.name: required"),
		Entry("a name with an edge space", recurring("xmas ", "0 0 * * *", time.Hour, ""), `window.name: must not start or end with a space, got "xmas "`),
		Entry("a name with a control character", recurring("x\x01", "0 0 * * *", time.Hour, ""), `window.name: must be printable, got "x\x01"`),
		Entry("a long name", recurring(strings.Repeat("a", 129), "0 0 * * *", time.Hour, ""), "window.name: must be at most 128 bytes, got 129"),
		Entry("neither kind", &models.FreezeWindow{Name: "x"}, "window.schedule: a window needs schedule (recurring) or from and until (one-off)"),
		Entry("a bad schedule", recurring("x", "61 * * * *", time.Hour, ""), `window.schedule: minute field "61": "61" is outside 0-59`),
		Entry("no duration", recurring("x", "0 0 * * *", 0, ""), "window.duration_ms: required with schedule"),
		Entry("a negative duration", &models.FreezeWindow{Name: "x", Schedule: "0 0 * * *", DurationMs: -5}, "window.duration_ms: must be positive, got -5"),
		Entry("a duration over a week", recurring("x", "0 0 * * *", models.MaxFreezeDuration+time.Millisecond, ""), "window.duration_ms: must be at most 604800000 (168h0m0s), got 604800001"),
		Entry("an unknown time zone", recurring("x", "0 0 * * *", time.Hour, "Mars/Base"), `window.time_zone: unknown time zone "Mars/Base" (an IANA name such as Europe/Berlin)`),
		Entry("the machine's zone", recurring("x", "0 0 * * *", time.Hour, "Local"), `window.time_zone: unknown time zone "Local" (an IANA name such as Europe/Berlin)`),
		Entry("a schedule with from", &models.FreezeWindow{Name: "x", Schedule: "0 0 * * *", DurationMs: 1, From: "2026-01-01T00:00:00Z"}, "window.from: not with schedule (a window is recurring or one-off)"),
		Entry("from without until", oneOff("x", "2026-01-01T00:00:00Z", ""), "window.until: required with from"),
		Entry("until without from", oneOff("x", "", "2026-01-01T00:00:00Z"), "window.from: required with until"),
		Entry("from not RFC 3339", oneOff("x", "2026-01-01 00:00", "2026-01-02T00:00:00Z"), `window.from: must be an RFC 3339 time such as 2026-12-24T18:00:00+01:00, got "2026-01-01 00:00"`),
		Entry("until equal to from", oneOff("x", "2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00Z"), "window.until: must be after from (2026-01-01T01:00:00+01:00), got 2026-01-01T00:00:00Z"),
		Entry("until in 2300, past what Unix nanoseconds hold", oneOff("x", "2026-01-01T00:00:00Z", "2300-01-01T00:00:00Z"),
			"window.until: must be from 1970-01-01T00:00:00Z and before 2262-01-01T00:00:00Z, got 2300-01-01T00:00:00Z"),
		Entry("from before 1970", oneOff("x", "1600-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
			"window.from: must be from 1970-01-01T00:00:00Z and before 2262-01-01T00:00:00Z, got 1600-01-01T00:00:00Z"),
		Entry("a one-off with a duration", &models.FreezeWindow{Name: "x", From: "2026-01-01T00:00:00Z", Until: "2026-01-02T00:00:00Z", DurationMs: 5}, "window.duration_ms: only with schedule"),
		Entry("a one-off with a time zone", &models.FreezeWindow{Name: "x", From: "2026-01-01T00:00:00Z", Until: "2026-01-02T00:00:00Z", TimeZone: "UTC"}, "window.time_zone: only with schedule (from and until carry their offset)"),
		Entry("created_at from a client", &models.FreezeWindow{Name: "x", Schedule: "0 0 * * *", DurationMs: 1, CreatedAt: 5}, "window.created_at: is set by the board"),
		Entry("requested_by from a client", &models.FreezeWindow{Name: "x", Schedule: "0 0 * * *", DurationMs: 1, RequestedBy: "me"}, "window.requested_by: is set by the board"),
	)

	It("accepts both kinds", func() {
		Expect((&models.AddFreezeWindowRequest{Window: recurring("weekend", "0 18 * * 5", 60*time.Hour, "Europe/Berlin")}).Validate()).To(Succeed())
		Expect((&models.AddFreezeWindowRequest{Window: oneOff("xmas", "2026-12-24T00:00:00Z", "2026-12-27T00:00:00Z")}).Validate()).To(Succeed())
	})

	It("refuses a bad name to remove", func() {
		Expect((&models.RemoveFreezeWindowRequest{}).Validate()).To(MatchError(models.ErrInvalidField("name", "required")))
	})

	DescribeTable("an update's override of the freeze",
		func(u *models.DesiredLRPUpdate, want string) {
			err := (&models.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: u}).Validate()
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(&models.Error{Type: models.Error_InvalidRequest, Message: "update." + want}))
		},
		Entry("a reason is required", &models.DesiredLRPUpdate{Definition: freezeDefinition(), OverrideFreeze: true}, "override_reason: required with override_freeze"),
		Entry("a reason without the override", &models.DesiredLRPUpdate{Definition: freezeDefinition(), OverrideReason: "why"}, "override_reason: only with override_freeze"),
		Entry("an override without a definition", &models.DesiredLRPUpdate{Instances: ptr(int32(2)), OverrideFreeze: true, OverrideReason: "why"},
			"override_freeze: only with a definition (nothing else an update does waits for a freeze)"),
		Entry("a reason that is not printable", &models.DesiredLRPUpdate{Definition: freezeDefinition(), OverrideFreeze: true, OverrideReason: "a\nb"},
			`override_reason: must be printable, got "a\nb"`),
		Entry("an override with its reason", &models.DesiredLRPUpdate{Definition: freezeDefinition(), OverrideFreeze: true, OverrideReason: "hotfix for INC-42"}, ""),
	)
})

func ptr[T any](v T) *T { return &v }

func freezeDefinition() *models.LRPDefinition {
	return validDefinition()
}
