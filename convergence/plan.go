package convergence

import (
	"time"
)

// Plan is what one convergence pass decided. It is pure data: the runner
// applies Writes with db.ConvergenceDB.ApplyConvergence, logs Reasons,
// publishes Counts as gauges and schedules an extra pass at NextWake.
type Plan struct {
	// Writes are the row changes, in the groups ApplyConvergence performs
	// them in. Every write names the row version it was computed from.
	Writes ConvergenceWrites
	// Reasons says, for every write, why it is there: Reasons.Delete[i]
	// explains Writes.Delete[i], and so on for every group.
	Reasons Reasons
	// Counts describe the snapshot as this pass found it.
	Counts Counts
	// Underway lists, in process guid order, the LRPs with instances being
	// replaced or moved (a RETIRING row stays, or one was started, this
	// pass): their next step waits on their instances, so the runner gives
	// them a pass every RolloutInterval rather than at the next full pass.
	Underway []string
	// NextWake is the earliest moment at which something in the snapshot
	// becomes due by the passing of time alone: a crash backoff ends or a
	// placed instance turns stale. Zero when nothing is waiting. Cell
	// expiry is not included: heartbeats keep moving it.
	NextWake time.Time
	// Autoscaled holds the figures of every autoscaled LRP of the pass,
	// in process guid order.
	Autoscaled []AutoscaleGauge
	// CrashSpikes are the registered cells whose crashes within the crash
	// memory's window spike (CrashMemory), in cell id order. Reported
	// only: placement treats them as any other cell.
	CrashSpikes []CellCrashSpike
	// Quarantine are the cells this pass quarantines on their crash
	// spike (Config.QuarantineOnCrashSpike, QuarantineSpikes); the runner
	// writes each (db.CellDB.QuarantineCell). This pass already places
	// nothing on them.
	Quarantine []CellQuarantine
}

// Reasons holds one human-readable reason per write, index for index with
// the groups of ConvergenceWrites.
type Reasons struct {
	Autoscale         []string
	Delete            []string
	Promote           []string
	MarkSuspect       []string
	Retire            []string
	RequestStop       []string
	Create            []string
	Restart           []string
	Redefine          []string
	Unassign          []string
	Place             []string
	PlacementFailed   []string
	Rollouts          []string
	DeleteDefinitions []string
	Operations        []string
}

// Counts are the gauges of a pass, named after Diego's BBS metrics. They
// count the snapshot as loaded, before the plan's writes; ORDINARY rows
// unless a field says otherwise, across every LRP, desired or not.
type Counts struct {
	// Desired is the sum of instances over all DesiredLRPs (LRPsDesired).
	Desired int
	// Running, Claimed, Unclaimed and Crashed count ORDINARY rows by state
	// (LRPsRunning, LRPsClaimed, LRPsUnclaimed, CrashedActualLRPs).
	Running   int
	Claimed   int
	Unclaimed int
	Crashed   int
	// Missing counts indices 0..instances-1 of desired LRPs that have no
	// ORDINARY row (LRPsMissing). Each gets a Create.
	Missing int
	// Extra counts ORDINARY rows with an index outside 0..instances-1 or of
	// an LRP that is no longer desired (LRPsExtra), whether or not this
	// pass may retire them.
	Extra int
	// Suspect counts SUSPECT rows, whatever their state (Diego splits
	// them into SuspectRunningActualLRPs and SuspectClaimedActualLRPs).
	Suspect int
	// GaveUp counts CRASHED ORDINARY rows at wanted indices of desired
	// LRPs that the crash policy no longer restarts. Diego has no such
	// gauge; it is the alert for an instance that will stay down.
	GaveUp int
	// Unplaced counts instances this pass could not place on any cell,
	// whether new (Create with a placement error) or existing.
	Unplaced int
	// PresentCells counts cells whose presence has not expired
	// (PresentCells).
	PresentCells int
	// SuspectCells counts distinct cells that are not present (expired or
	// never registered) yet still named by a CLAIMED or RUNNING row of any
	// presence (SuspectCells).
	SuspectCells int
	// RolloutsUnderWay, RolloutsFailed and RolloutsHeld count the rollout
	// records of desired LRPs by the state this pass leaves them in:
	// under way (models.RolloutUnderWay: PROGRESSING, HOLDING, or REVERTED
	// with instances still going back), FAILED (the progress deadline or a
	// verdict stopped it; it stays so until a rollback or a new
	// definition) and HELD (stopped under on_failure hold until a resume,
	// rollback or abort). Diego has no such gauges: FAILED and HELD are
	// the alerts for a rollout that waits for an operator.
	RolloutsUnderWay int
	RolloutsFailed   int
	RolloutsHeld     int
	// RolloutsBlocked counts, by reason (models.BlockedBy's), the rollouts
	// this pass leaves under way with a blocked_by (DiagnoseRollout); nil
	// when none is blocked. RolloutsBlockedTooLong counts those blocked by
	// the same reason for Config.BlockedAlertAfter or longer: what an
	// alert watches.
	RolloutsBlocked        map[string]int
	RolloutsBlockedTooLong int
	// OperationsBlocked counts, by reason, the blocked rollouts of
	// RolloutsBlocked that an operation started: that operation is under
	// way and carries the rollout's blocked_by. Nil when none.
	OperationsBlocked map[string]int
}
