package models

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	// Time zones are part of a window's meaning: the board and cork carry
	// their own copy of the IANA database, so that a window validates and
	// evaluates the same on every machine, with or without a system
	// zoneinfo.
	_ "time/tzdata"
)

// Freeze windows (issue 31, item 4; docs/rollouts.md "Freeze windows").
//
// While a window is active, no rollout starts or progresses unless freezes
// do not hold it (FreezeHolds). A recurring window's occurrences start at
// the instants its schedule names on the wall clock of its time zone and
// each lasts duration_ms of real time; a one-off window is active from
// from (included) to until (excluded).
//
// Daylight saving time: an occurrence starts at the first instant the
// wall clock reads its scheduled time or later.
//   - On a spring-forward day the scheduled time may not exist (02:30 in
//     Europe/Berlin on the last Sunday of March, when clocks jump from
//     02:00 to 03:00): the occurrence starts at the jump, 03:00 CEST.
//   - On a fall-back day the scheduled time may happen twice (02:30 in
//     Europe/Berlin on the last Sunday of October, first CEST then CET):
//     the occurrence starts at the first, 02:30 CEST, once; the second
//     02:30 starts nothing.
// Durations are real time: a 2h occurrence from 01:30 CET on the
// spring-forward day ends at 04:30 CEST.

const (
	// MaxFreezeDuration bounds a recurring window's duration_ms: a week,
	// the span over which FreezeActive looks back for an occurrence that
	// has not ended.
	MaxFreezeDuration = 7 * 24 * time.Hour
	// maxFreezeNameBytes bounds a window's name (the key column is
	// VARCHAR(255) on every dialect).
	maxFreezeNameBytes = 128
	// MaxOverrideReasonBytes bounds update.override_reason.
	MaxOverrideReasonBytes = 1024
)

// Freeze exemptions: why freezes do not hold a rollout
// (RolloutStatus.freeze_exemption).
const (
	// FreezeExemptRevert: a rollback or an abort, an operator going back.
	FreezeExemptRevert = "revert"
	// FreezeExemptOverride: an update with override_freeze.
	FreezeExemptOverride = "override"
)

// FreezeHolds reports whether an active freeze window holds a rollout in
// state with exemption (RolloutStatus.freeze_exemption): only a rollout
// that moves (PROGRESSING) is held, unless it is a revert or overrides
// the freeze. Reverts are never held: an auto-revert (REVERTED) and a
// rollback or an abort (exemption "revert") go back to a definition known
// to run, which is what an operator wants during a freeze. A rollout that
// moves nothing by itself (HOLDING at a staged target, HELD, FAILED,
// COMPLETE) has nothing to hold; a promote during a freeze makes it
// PROGRESSING, which is held.
//
// Worked examples:
//  1. PROGRESSING, ""         → held.
//  2. HOLDING, ""             → not held (waits for a promote anyway).
//  3. REVERTED, ""            → not held (auto-revert).
//  4. PROGRESSING, "revert"   → not held (rollback or abort).
//  5. PROGRESSING, "override" → not held.
func FreezeHolds(state RolloutStatus_State, exemption string) bool {
	return state == RolloutStatus_PROGRESSING && exemption == ""
}

// FreezeChanged is the event of a window added (before nil) or removed
// (after nil) at the request of requestedBy, keyed by the window's name.
func FreezeChanged(before, after *FreezeWindow, requestedBy string) Event {
	name := after.GetName()
	if after == nil {
		name = before.GetName()
	}
	return Event{Type: EventFreezeChanged, Key: "freeze/" + name,
		Payload: &FreezeChangedEvent{Before: before, After: after, RequestedBy: requestedBy}}
}

// frozenSeparator joins a held rollout's own reason and the freeze's.
const frozenSeparator = "; frozen by "

// FrozenReason is the reason of a rollout a freeze holds: its own reason
// (without an earlier freeze's part), then "; frozen by NAME until TIME"
// with TIME in RFC 3339, UTC. ThawedReason takes the freeze's part off
// again once no window holds the rollout.
//
// Worked examples:
//  1. ("rolling from v1 to v2", xmas, 2026-12-27T08:00:00+01:00)
//     → "rolling from v1 to v2; frozen by xmas until 2026-12-27T07:00:00Z".
//  2. that reason, with window weekend until 2026-12-28T06:00:00Z
//     → "rolling from v1 to v2; frozen by weekend until 2026-12-28T06:00:00Z".
func FrozenReason(reason, window string, until time.Time) string {
	return ThawedReason(reason) + frozenSeparator + window + " until " + until.UTC().Format(time.RFC3339)
}

// ThawedReason is reason without the part FrozenReason added: example 1
// above gives back "rolling from v1 to v2"; a reason without one is
// itself.
func ThawedReason(reason string) string {
	if at := strings.LastIndex(reason, frozenSeparator); at >= 0 {
		return reason[:at]
	}
	return reason
}

// FreezeActive reports which of windows is active at now, and when its
// occurrence covering now ends; nil and the zero time when none is. When
// several are active, the one that ends last wins (the first by name on a
// tie, whatever the order of windows), so that the reason names the
// longest hold. A
// window that does not validate is never active (the store keeps only
// valid ones).
//
// Worked examples (now = 2026-03-29T01:15:00Z, a Sunday, Berlin's
// spring-forward day, jump at 01:00Z):
//  1. one-off 00:00Z–02:00Z               → active until 02:00Z.
//  2. one-off 01:15Z–02:00Z               → active (from is included).
//  3. one-off 00:00Z–01:15Z               → not active (until is not).
//  4. "30 2 * * *" 1h Europe/Berlin       → active from 03:00 CEST (01:00Z),
//     the first instant at or after 02:30, until 02:00Z.
//  5. "0 0 * * 0" 2h UTC                  → active since 00:00Z until 02:00Z.
//  6. 1, 4 and 5 named c, a and b        → all end at 02:00Z: a, the first
//     by name.
func FreezeActive(windows []*FreezeWindow, now time.Time) (*FreezeWindow, time.Time) {
	var active *FreezeWindow
	var until time.Time
	for _, w := range windows {
		end, ok := freezeEnd(w, now)
		if ok && (active == nil || end.After(until) || end.Equal(until) && w.GetName() < active.GetName()) {
			active, until = w, end
		}
	}
	return active, until
}

// freezeEnd is when w's occurrence covering now ends, and whether one
// does.
func freezeEnd(w *FreezeWindow, now time.Time) (time.Time, bool) {
	if w.GetSchedule() == "" {
		from, errFrom := time.Parse(time.RFC3339, w.GetFrom())
		until, errUntil := time.Parse(time.RFC3339, w.GetUntil())
		if errFrom != nil || errUntil != nil || !now.Before(until) || now.Before(from) {
			return time.Time{}, false
		}
		return until, true
	}
	sched, err := ParseCron(w.GetSchedule())
	loc, errZone := freezeZone(w.GetTimeZone())
	duration := Millis(w.GetDurationMs())
	if err != nil || errZone != nil || duration <= 0 || duration > MaxFreezeDuration {
		return time.Time{}, false
	}
	start, ok := latestStart(sched, loc, now, duration)
	if !ok || !now.Before(start.Add(duration)) {
		return time.Time{}, false
	}
	return start.Add(duration), true
}

// maxWallShift bounds how far a wall clock goes back at a transition
// (an hour in most zones; a margin for the rest).
const maxWallShift = 3 * time.Hour

// latestStart is the latest occurrence of sched in loc that starts at or
// before now, looking back duration (and a margin) only: an older one has
// ended. Occurrences start in the order of their scheduled wall times
// (occurrenceStart is monotone), so walking the wall times down from now
// the first one that starts at or before now is the latest.
func latestStart(sched CronSchedule, loc *time.Location, now time.Time, duration time.Duration) (time.Time, bool) {
	wallNow := wallClock(now.In(loc))
	last := wallNow.Add(maxWallShift)
	earliest := wallNow.Add(-duration - 2*maxWallShift)
	day := time.Date(last.Year(), last.Month(), last.Day(), 0, 0, 0, 0, time.UTC)
	for ; !day.Add(24 * time.Hour).Before(earliest); day = day.AddDate(0, 0, -1) {
		if !sched.matchesDay(day.Day(), int(day.Month()), int(day.Weekday())) {
			continue
		}
		for h := 23; h >= 0; h-- {
			if sched.hour&(1<<h) == 0 {
				continue
			}
			for m := 59; m >= 0; m-- {
				if sched.minute&(1<<m) == 0 {
					continue
				}
				wall := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, time.UTC)
				if wall.After(last) {
					continue
				}
				if wall.Before(earliest) {
					return time.Time{}, false
				}
				if start := occurrenceStart(wall, loc); !start.After(now) {
					return start, true
				}
			}
		}
	}
	return time.Time{}, false
}

// wallClock is t's wall-clock reading as a UTC time, for comparing
// readings.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// occurrenceStart is the first instant at which loc's wall clock reads
// wall (a reading as wallClock gives it) or later: the instant itself on
// an ordinary day, the first of two on a fall-back day, the transition on
// a spring-forward day when wall falls in the gap.
func occurrenceStart(wall time.Time, loc *time.Location) time.Time {
	// The offsets in force around wall; a zone changes its offset at most
	// once in a day and a half.
	var offsets []int
	for _, probe := range []time.Time{wall.Add(-36 * time.Hour), wall, wall.Add(36 * time.Hour)} {
		_, offset := probe.In(loc).Zone()
		offsets = append(offsets, offset)
	}
	var best time.Time
	for _, offset := range offsets {
		t := wall.Add(-time.Duration(offset) * time.Second)
		if wallClock(t.In(loc)).Equal(wall) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	if !best.IsZero() {
		return best
	}
	// In a gap: the reading is skipped; the transition is the first
	// instant that reads later.
	for _, offset := range offsets {
		t := wall.Add(-time.Duration(offset) * time.Second).In(loc)
		if !wallClock(t).After(wall) {
			continue
		}
		transition, _ := t.ZoneBounds()
		if !transition.IsZero() && !wallClock(transition.In(loc)).Before(wall) && (best.IsZero() || transition.Before(best)) {
			best = transition
		}
	}
	if best.IsZero() {
		// Cannot happen for a zone with sane transitions; the reading
		// with the offset in force at wall is a fair answer.
		return wall.Add(-time.Duration(offsets[1]) * time.Second)
	}
	return best
}

// freezeZone is the location of a window's time_zone, UTC when empty.
func freezeZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		// LoadLocation answers the machine's zone for "Local": a window
		// must mean the same on every board.
		return nil, fmt.Errorf("unknown time zone")
	}
	return time.LoadLocation(name)
}

// Validate requires a valid window.
func (r *AddFreezeWindowRequest) Validate() error {
	if r.GetWindow() == nil {
		return ErrInvalidField("window", "required")
	}
	return r.GetWindow().validate("window")
}

// Validate requires a valid name.
func (r *RemoveFreezeWindowRequest) Validate() error {
	return validateFreezeName("name", r.GetName())
}

// Validate accepts every (empty) request.
func (r *FreezeWindowsRequest) Validate() error {
	return nil
}

// ValidateFreezeWindow checks w as the add call does, naming fields from
// path; the store uses it too.
func ValidateFreezeWindow(path string, w *FreezeWindow) error {
	return w.validate(path)
}

// validate checks a window: a name; either a recurring window (schedule,
// duration_ms, optional time_zone) or a one-off one (from, until), never
// a mix; created_at and requested_by are the board's to set.
//
// Worked examples (path "window"):
//  1. {name "x", schedule "0 22 * * 5", duration_ms 3600000}   → valid, UTC.
//  2. {name "x", from "2026-12-24T00:00:00Z", until "2026-12-27T00:00:00Z"} → valid.
//  3. {name "x", schedule "61 * * * *", duration_ms 1}
//     → window.schedule: minute field "61": "61" is outside 0-59.
//  4. {name "x", schedule "0 * * * *", duration_ms 0} → window.duration_ms: required.
//  5. {name "x", from …, until = from} → window.until: must be after from.
//  6. {name "x", schedule …, from …} → window.from: not with schedule.
func (w *FreezeWindow) validate(path string) error {
	if err := validateFreezeName(path+".name", w.GetName()); err != nil {
		return err
	}
	if w.GetCreatedAt() != 0 {
		return ErrInvalidField(path+".created_at", "is set by the board")
	}
	if w.GetRequestedBy() != "" {
		return ErrInvalidField(path+".requested_by", "is set by the board")
	}
	if w.GetSchedule() == "" {
		return w.validateOneOff(path)
	}
	if w.GetFrom() != "" {
		return ErrInvalidField(path+".from", "not with schedule (a window is recurring or one-off)")
	}
	if w.GetUntil() != "" {
		return ErrInvalidField(path+".until", "not with schedule (a window is recurring or one-off)")
	}
	if _, err := ParseCron(w.GetSchedule()); err != nil {
		return ErrInvalidField(path+".schedule", err.Error())
	}
	switch ms := w.GetDurationMs(); {
	case ms == 0:
		return ErrInvalidField(path+".duration_ms", "required with schedule")
	case ms < 0:
		return ErrInvalidField(path+".duration_ms", "must be positive, got "+strconv.FormatInt(ms, 10))
	case ms > MaxFreezeDuration.Milliseconds():
		return ErrInvalidField(path+".duration_ms", fmt.Sprintf("must be at most %d (%s), got %d", MaxFreezeDuration.Milliseconds(), MaxFreezeDuration, ms))
	}
	if err := validateName(path+".time_zone", w.GetTimeZone()); err != nil {
		return err
	}
	if _, err := freezeZone(w.GetTimeZone()); err != nil {
		return ErrInvalidField(path+".time_zone", "unknown time zone "+quoteShort(w.GetTimeZone())+" (an IANA name such as Europe/Berlin)")
	}
	return nil
}

// A one-off window's times lie within these: the board keeps and
// compares times as Unix nanoseconds, which end in April 2262.
var (
	freezeTimesFrom  = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	freezeTimesUntil = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

func (w *FreezeWindow) validateOneOff(path string) error {
	if w.GetFrom() == "" && w.GetUntil() == "" {
		return ErrInvalidField(path+".schedule", "a window needs schedule (recurring) or from and until (one-off)")
	}
	if w.GetDurationMs() != 0 {
		return ErrInvalidField(path+".duration_ms", "only with schedule")
	}
	if w.GetTimeZone() != "" {
		return ErrInvalidField(path+".time_zone", "only with schedule (from and until carry their offset)")
	}
	var times [2]time.Time
	for i, field := range []string{"from", "until"} {
		value := []string{w.GetFrom(), w.GetUntil()}[i]
		if value == "" {
			return ErrInvalidField(path+"."+field, "required with "+[]string{"until", "from"}[i])
		}
		t, err := time.Parse(time.RFC3339, value)
		if err != nil {
			return ErrInvalidField(path+"."+field, "must be an RFC 3339 time such as 2026-12-24T18:00:00+01:00, got "+quoteShort(value))
		}
		if t.Before(freezeTimesFrom) || !t.Before(freezeTimesUntil) {
			return ErrInvalidField(path+"."+field, "must be from "+freezeTimesFrom.Format(time.RFC3339)+" and before "+freezeTimesUntil.Format(time.RFC3339)+", got "+value)
		}
		times[i] = t
	}
	if !times[1].After(times[0]) {
		return ErrInvalidField(path+".until", "must be after from ("+w.GetFrom()+"), got "+w.GetUntil())
	}
	return nil
}

func validateFreezeName(path, name string) error {
	if name == "" {
		return ErrInvalidField(path, "required")
	}
	if err := validateName(path, name); err != nil {
		return err
	}
	if len(name) > maxFreezeNameBytes {
		return ErrInvalidField(path, fmt.Sprintf("must be at most %d bytes, got %d", maxFreezeNameBytes, len(name)))
	}
	return nil
}

// validateOverride checks an update's override_freeze and
// override_reason: the reason is required with the override and only with
// it, printable, at most MaxOverrideReasonBytes; the override needs a
// definition (nothing else an update does is held by a freeze).
func (u *DesiredLRPUpdate) validateOverride(path string) error {
	reason := u.GetOverrideReason()
	if !u.GetOverrideFreeze() {
		if reason != "" {
			return ErrInvalidField(child(path, "override_reason"), "only with override_freeze")
		}
		return nil
	}
	if u.GetDefinition() == nil {
		return ErrInvalidField(child(path, "override_freeze"), "only with a definition (nothing else an update does waits for a freeze)")
	}
	if reason == "" {
		return ErrInvalidField(child(path, "override_reason"), "required with override_freeze")
	}
	if err := validateName(child(path, "override_reason"), reason); err != nil {
		return err
	}
	if len(reason) > MaxOverrideReasonBytes {
		return ErrInvalidField(child(path, "override_reason"), fmt.Sprintf("must be at most %d bytes, got %d", MaxOverrideReasonBytes, len(reason)))
	}
	return nil
}
