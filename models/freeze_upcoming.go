package models

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// FreezeUpcomingHorizon is how far ahead FreezeUpcoming looks: a week
// covers every weekly schedule.
const FreezeUpcomingHorizon = 7 * 24 * time.Hour

// FreezeUpcoming lists, for each window, its next occurrence that starts
// after now and no later than now + horizon, in start order (then name):
// what the dashboard shows coming. An occurrence active at now is not
// listed (FreezeActive says it); a window that does not validate, or has
// no occurrence within horizon, has no entry.
//
// Worked examples (now = 2026-10-24T12:00:00Z, a Saturday; Berlin falls
// back from CEST to CET on 2026-10-25 at 01:00Z):
//  1. one-off 2026-10-24T18:00Z–20:00Z     → 18:00Z–20:00Z.
//  2. one-off 2026-10-24T10:00Z–13:00Z     → nothing: active now.
//  3. "30 2 * * *" 1h Europe/Berlin        → 2026-10-25T00:30Z (02:30 CEST,
//     the first of the two 02:30s of the fall-back night) until 01:30Z.
//  4. "0 9 * * 1" 2h America/New_York     → Monday 2026-10-26T13:00Z
//     (09:00 EDT) until 15:00Z.
//  5. "0 0 1 1 *" 1h UTC                   → nothing within a week.
func FreezeUpcoming(windows []*FreezeWindow, now time.Time, horizon time.Duration) []*FreezeOccurrence {
	var upcoming []*FreezeOccurrence
	for _, w := range windows {
		if start, end, ok := nextFreezeStart(w, now, horizon); ok {
			upcoming = append(upcoming, &FreezeOccurrence{Name: w.GetName(), StartsAt: start.UnixNano(), EndsAt: end.UnixNano()})
		}
	}
	slices.SortFunc(upcoming, func(a, b *FreezeOccurrence) int {
		return cmp.Or(cmp.Compare(a.StartsAt, b.StartsAt), strings.Compare(a.Name, b.Name))
	})
	return upcoming
}

// nextFreezeStart is w's first occurrence starting after now, within
// horizon, and when it ends.
func nextFreezeStart(w *FreezeWindow, now time.Time, horizon time.Duration) (time.Time, time.Time, bool) {
	limit := now.Add(horizon)
	if w.GetSchedule() == "" {
		from, errFrom := time.Parse(time.RFC3339, w.GetFrom())
		until, errUntil := time.Parse(time.RFC3339, w.GetUntil())
		if errFrom != nil || errUntil != nil || !from.After(now) || from.After(limit) || !until.After(from) {
			return time.Time{}, time.Time{}, false
		}
		return from, until, true
	}
	sched, err := ParseCron(w.GetSchedule())
	loc, errZone := freezeZone(w.GetTimeZone())
	duration := Millis(w.GetDurationMs())
	if err != nil || errZone != nil || duration <= 0 || duration > MaxFreezeDuration {
		return time.Time{}, time.Time{}, false
	}
	// Occurrences start in the order of their wall times
	// (occurrenceStart is monotone): walking the wall times up from a
	// margin before now, the first that starts after now is the next.
	wallNow := wallClock(now.In(loc))
	first := wallNow.Add(-maxWallShift)
	last := wallClock(limit.In(loc)).Add(maxWallShift)
	for day := time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, time.UTC); !day.After(last); day = day.AddDate(0, 0, 1) {
		if !sched.matchesDay(day.Day(), int(day.Month()), int(day.Weekday())) {
			continue
		}
		for h := 0; h < 24; h++ {
			if sched.hour&(1<<h) == 0 {
				continue
			}
			for m := 0; m < 60; m++ {
				if sched.minute&(1<<m) == 0 {
					continue
				}
				wall := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, time.UTC)
				if wall.Before(first) {
					continue
				}
				start := occurrenceStart(wall, loc)
				if !start.After(now) {
					continue
				}
				if start.After(limit) {
					return time.Time{}, time.Time{}, false
				}
				return start, start.Add(duration), true
			}
		}
	}
	return time.Time{}, time.Time{}, false
}
