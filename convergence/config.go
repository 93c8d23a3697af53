package convergence

import (
	"time"

	"github.com/corkboard/corkboard/models"
)

// Config tunes the planner. Compute uses it as given: start from
// DefaultConfig and change what you need.
type Config struct {
	// CrashPolicy decides when a CRASHED instance is restarted.
	CrashPolicy CrashPolicy
	// StaleUnclaimed is how long an instance may stay UNCLAIMED on the cell
	// it was placed on before the planner gives up on that cell and places
	// it again. Measured from the row's Since, which placement sets.
	StaleUnclaimed time.Duration
	// EvacuationGrace is how long an EVACUATING row may outlive the start
	// of its replacement: once the index's ORDINARY row has been RUNNING
	// this long, the planner deletes the EVACUATING row. Its rep learns on
	// its next bulk report that it may stop the instance and removes the
	// row itself well before then; this catches a rep that did not. The
	// board sets it to twice the cells' presence TTL.
	EvacuationGrace time.Duration
	// Board names the board converging: it owns the leases of the
	// operations it carries (operations.go). Empty: no lease is taken or
	// renewed.
	Board string
	// OperationLeaseTTL is how long an operation's lease lasts unless its
	// owner renews it; the runner uses its convergence lease TTL.
	OperationLeaseTTL time.Duration
	// ScaleDownStabilization is the autoscaler's scale-down window for
	// LRPs that set none: the count goes down only to the highest count
	// wanted within it.
	ScaleDownStabilization time.Duration
	// PresenceGrace keeps present the cells whose presence ran out while
	// the board could not see its database (the runner sets it each pass
	// from runner.RunnerConfig.PresenceGrace). Zero: none.
	PresenceGrace PresenceGrace
	// MaxRolloutsInFlight is the most rollouts that move instances at once
	// across the board (governor.go); the others wait QUEUED. 0: no limit.
	MaxRolloutsInFlight int32
	// MaxStartsPerCellPerSecond is the most instances placement gives one
	// cell within any StartWindow (cell_starts.go); the others wait for a
	// later pass. 0: no limit.
	MaxStartsPerCellPerSecond int32
	// QuarantineOnCrashSpike: a cell whose crashes spike is quarantined
	// (QuarantineSpikes, Plan.Quarantine): placement puts nothing new on
	// it until an operator clears it. False: spikes are only reported.
	QuarantineOnCrashSpike bool
	// CrashMemory says how long placement avoids the cells an LRP's
	// definition crashed on, and when a cell's crashes are reported as a
	// spike (crash_memory.go). The zero value turns both off. The store
	// keeps crashes for MaxCrashWindow, so a longer window remembers no
	// more than that.
	CrashMemory CrashMemory
	// BlockedAlertAfter is how long a rollout may stay blocked by one
	// cause (its blocked_by's since) before Counts.RolloutsBlockedTooLong
	// counts it. 0: never counted.
	BlockedAlertAfter time.Duration
}

// PresenceGrace is the board's last database outage, as it saw it: a rep
// cannot renew its cell's presence while the database is down or stalled,
// so a presence that ran out during the outage says nothing about the
// cell. Such a cell stays present until Until, a presence TTL after the
// database answered again, so that its rep gets a whole TTL of reachable
// database to renew in. A cell that expired before the outage began stays
// absent; one whose rep died meanwhile goes absent at Until.
//
// Worked example, presence TTL 10 s:
//  1. A cell's presence runs until 12:00:05 (renewed at 11:59:55).
//  2. The board last reads its database at 12:00:00 (OutageBegan); the
//     database is frozen until 12:00:30; Until is 12:00:40.
//  3. A pass at 12:00:31: the presence ran out at 12:00:05, after the
//     outage began, and it is not 12:00:40 yet: the cell is present and
//     its instances are not SUSPECT, though 26 s have passed.
//  4. The rep renews at 12:00:33 (presence until 12:00:43): present on
//     its own. Had the rep died at 12:00:10, the cell would go absent at
//     12:00:40 and its instances SUSPECT then.
//  5. A cell whose presence ran out at 11:59:58, before the outage, is
//     absent at 12:00:31 as it would have been.
type PresenceGrace struct {
	// OutageBegan is when the board last read its database before the
	// outage; Until is a presence TTL after it read it again.
	OutageBegan, Until time.Time
}

// keeps says whether a cell whose presence runs out at expiresAt counts
// as present at now by the grace.
func (g PresenceGrace) keeps(expiresAt, now int64) bool {
	return !g.Until.IsZero() && now < g.Until.UnixNano() && expiresAt >= g.OutageBegan.UnixNano()
}

// Timings the planner shares with its runner (runner.RunnerConfig's
// defaults): an operation's lease lasts as long as the convergence lease
// (Config.OperationLeaseTTL), and a rollout plan ticks as often as the
// runner's targeted passes over rollouts (DryRun.RolloutInterval).
const (
	// DefaultLeaseTTL is how long the convergence lease lasts unless
	// renewed; the owner renews it every third of that.
	DefaultLeaseTTL = 15 * time.Second
	// DefaultRolloutInterval is how often the LRPs with a rollout under
	// way get a targeted pass: a rollout moves one step per pass (a ready
	// replacement's predecessor stops, the next one starts), and waiting
	// for the full pass would make a 10-instance serial rollout take five
	// minutes.
	DefaultRolloutInterval = time.Second
)

// DefaultBlockedAlertAfter is Config.BlockedAlertAfter's default (the
// board's blocked_alert_after).
const DefaultBlockedAlertAfter = 10 * time.Minute

// DefaultConfig is the board's configuration unless an operator overrides
// it: the crash policy of DefaultCrashPolicy, a stale_unclaimed of 60 s and
// an evacuation grace of 60 s (twice the default presence TTL of 30 s).
func DefaultConfig() Config {
	return Config{
		CrashPolicy:       DefaultCrashPolicy(),
		StaleUnclaimed:    60 * time.Second,
		EvacuationGrace:   60 * time.Second,
		OperationLeaseTTL: DefaultLeaseTTL,
		CrashMemory:       DefaultCrashMemory(),
		BlockedAlertAfter: DefaultBlockedAlertAfter,

		ScaleDownStabilization: models.DefaultScaleDownStabilization,
	}
}

// CrashPolicy is Diego's restart policy for crashed instances: the first few
// crashes restart at once, after that each restart waits twice as long as
// the previous one, up to a cap, and at some count the board gives up.
type CrashPolicy struct {
	// ImmediateRestarts is how many crashes restart without waiting.
	ImmediateRestarts int32
	// BaseDelay is the wait after crash number ImmediateRestarts+1; every
	// further crash doubles it.
	BaseDelay time.Duration
	// MaxDelay caps the wait.
	MaxDelay time.Duration
	// GiveUpAt is the crash count at which an instance stays CRASHED for
	// good (until its LRP is updated or removed). Zero never gives up.
	GiveUpAt int32
}

// DefaultCrashPolicy restarts crashes 1–3 at once, then waits 30 s, 60 s,
// 2 min, … capped at 16 min, and gives up at 200 crashes.
func DefaultCrashPolicy() CrashPolicy {
	return CrashPolicy{
		ImmediateRestarts: 3,
		BaseDelay:         30 * time.Second,
		MaxDelay:          16 * time.Minute,
		GiveUpAt:          200,
	}
}

// RestartDelay says how long after its latest crash an instance that has
// crashed crashCount times waits before it is restarted. restarts is false
// when the policy has given up on it.
//
// With the defaults: 0–3 → 0, 4 → 30 s, 5 → 1 min, 6 → 2 min, 7 → 4 min,
// 8 → 8 min, 9 and more → 16 min, 200 and more → never.
func (p CrashPolicy) RestartDelay(crashCount int32) (delay time.Duration, restarts bool) {
	if p.GiveUpAt > 0 && crashCount >= p.GiveUpAt {
		return 0, false
	}
	if crashCount <= p.ImmediateRestarts || p.BaseDelay <= 0 {
		return 0, true
	}
	delay = p.BaseDelay
	for n := p.ImmediateRestarts + 1; n < crashCount; n++ {
		if delay >= p.MaxDelay/2 {
			// Doubling would reach the cap; stopping here also keeps a
			// huge crash count from overflowing the duration.
			return p.MaxDelay, true
		}
		delay *= 2
	}
	return min(delay, p.MaxDelay), true
}
