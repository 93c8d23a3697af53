package models

// Where a rollout record stands (RolloutStatus.State), as the store and the
// planner both ask it. Each question has one answer here, so that the
// rollout status a client reads and the pass that acts on the record
// cannot disagree.
//
// Worked example: a rollout of hello from v1 to v2, progress deadline
// 10 min, auto_revert on.
//
//  1. The update writes the record PROGRESSING at 12:00: advancing, under
//     way, and its deadline runs: deadline_at 12:10.
//  2. It is staged, and a member crashes at 12:03: the phase is paused.
//     Still advancing and under way, but the deadline stops: deadline_at
//     0 until a resume.
//  3. Resumed, then at its target below 100% the phase HOLDs: advancing
//     and under way (a promote moves it on), the deadline stopped.
//  4. Promoted to 100%, no index completes within 10 min: the pass fails
//     it and auto-reverts: REVERTED, not finished: no longer advancing
//     (nothing moves onto v2), but under way (the instances go back to
//     v1) and its deadline runs again.
//  5. Every index is back on v1: REVERTED and finished: neither under way
//     nor running a deadline. COMPLETE and FAILED are the same.

// RolloutAdvancing reports whether a rollout in state moves the LRP's
// instances onto its definition: PROGRESSING, or HOLDING (a staged phase
// at its target, which a promote moves on). Only an advancing rollout has
// a staged phase the planner follows or an operator can promote, pause or
// resume.
func RolloutAdvancing(state RolloutStatus_State) bool {
	return state == RolloutStatus_PROGRESSING || state == RolloutStatus_HOLDING
}

// RolloutUnderWay reports whether the planner still drives a rollout in
// state, finished at finishedAt (0: not yet): an advancing one, or one
// REVERTED whose instances are still going back. It may then complete,
// progress or fail; NONE, COMPLETE, FAILED and a finished REVERTED wait
// for a new definition, a rollback or an abort.
func RolloutUnderWay(state RolloutStatus_State, finishedAt int64) bool {
	return RolloutAdvancing(state) || state == RolloutStatus_REVERTED && finishedAt == 0
}

// RolloutOpen reports whether a rollout in state, finished at finishedAt,
// is not over: under way (RolloutUnderWay), or HELD, waiting for an
// operator to resume, roll back or abort it (every index may run its
// definition already: held in its bake). An open record is never settled
// (each pass reads it) and the operation that started it stays
// IN_PROGRESS, so that one queued behind it waits.
func RolloutOpen(state RolloutStatus_State, finishedAt int64) bool {
	return RolloutUnderWay(state, finishedAt) || state == RolloutStatus_HELD
}

// RolloutDeadlineRuns reports whether the progress deadline of a rollout
// in state, finished at finishedAt, in the staged phase stage (nil: not
// staged), runs: while PROGRESSING and not paused, or REVERTED and not
// finished. A HOLDING phase waits for a promote and a paused one for a
// resume (which moves progress_at on by the paused time): neither fails
// for waiting. The planner stops it also while a staged phase waits for
// its share to grow; that takes the instances, which this does not see.
func RolloutDeadlineRuns(state RolloutStatus_State, finishedAt int64, stage *RolloutStage) bool {
	return state == RolloutStatus_PROGRESSING && !stage.GetPaused() ||
		state == RolloutStatus_REVERTED && finishedAt == 0
}
