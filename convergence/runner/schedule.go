package runner

import "time"

// schedule holds a tenure's two timers: the next full pass, and the next
// wake-up a plan asked for.
type schedule struct {
	full   *time.Timer
	wake   *time.Timer
	wakeAt time.Time
	// minGap keeps a wake-up that is already due (a write that lost its
	// race leaves the plan's NextWake in the past) from running passes
	// back to back.
	minGap time.Duration
	// now is the planner's clock (RunnerConfig.Now), which wake-ups are
	// in: on the database's time, which the machine's clock may not be.
	now func() time.Time
}

func newSchedule(interval time.Duration, now func() time.Time) *schedule {
	s := &schedule{
		full:   time.NewTimer(interval),
		wake:   time.NewTimer(time.Hour),
		minGap: min(interval, time.Second),
		now:    now,
	}
	s.wake.Stop()
	return s
}

func (s *schedule) stop() {
	s.full.Stop()
	s.wake.Stop()
}

// setWake replaces the wake-up with at (none when zero), for a pass that
// started at passStarted; both are times of the planner's clock.
func (s *schedule) setWake(at, passStarted time.Time) {
	s.wake.Stop()
	s.wakeAt = time.Time{}
	s.wakeNoLaterThan(at, passStarted)
}

// wakeNoLaterThan brings the wake-up forward to at, if that is earlier.
func (s *schedule) wakeNoLaterThan(at, passStarted time.Time) {
	if at.IsZero() {
		return
	}
	if earliest := passStarted.Add(s.minGap); at.Before(earliest) {
		at = earliest
	}
	if !s.wakeAt.IsZero() && !at.Before(s.wakeAt) {
		return
	}
	s.wakeAt = at
	// A timer runs on the machine's clock: it gets the time left. Worked
	// example, a machine 6 s ahead of the database: at 12:00:10 by the
	// planner's clock (12:00:16 by the machine's) a wake-up at 12:00:12
	// fires in 2 s, where time.Until would have said -4 s.
	s.wake.Reset(at.Sub(s.now()))
}

// woke clears the wake-up that just fired.
func (s *schedule) woke() {
	s.wakeAt = time.Time{}
}
