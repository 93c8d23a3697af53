package rep

import (
	"context"
	"errors"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// CellCalls is how a cell makes its calls to the board: which calls are
// repeated until the board answers (claim, crash, remove: see Answered),
// which are made once (start, evacuate, bulk report), how long the call
// that marks an instance unroutable keeps trying, and how every call
// about an instance stays apart from the bulk reports (CallGate). The
// agent makes every board call of its cell through one, and so does
// internal/simcell, the simulated cell of the board's tests: what the
// tests see a cell do is what a rep does.
//
// K names an instance in the gate (see CallGate). It is safe for
// concurrent use.
type CellCalls[K comparable] struct {
	board *client.CellClient
	gate  *CallGate[K]
	cfg   CellCallsConfig[K]
}

// CellCallsConfig configures CellCalls.
type CellCallsConfig[K comparable] struct {
	// RetryInterval is how long a call that got no answer waits before it
	// is made again. Required.
	RetryInterval time.Duration
	// UnroutableRetryTimeout bounds how long MarkUnroutable keeps trying
	// while the board does not answer at all. Required.
	UnroutableRetryTimeout time.Duration
	// FinalCallTimeout, when not zero, gives a call that is repeated until
	// answered one last attempt of at most this long once its context has
	// ended: a rep on its way out still tells the board what became of
	// its instances, without a gone board holding the exit up. Zero: the
	// call returns when its context ends.
	FinalCallTimeout time.Duration
	// HoldBack, when set and true, holds back every attempt of a repeated
	// call until it turns false (a simulated cell that went silent).
	HoldBack func() bool
	// CallEnded, when set, is told each time a call about an instance
	// ended: what waited for the call may go.
	CallEnded func(k K)
}

// CallAbout names the instance a board call is about.
type CallAbout[K comparable] struct {
	// Key names the instance in the gate.
	Key K
	client.Instance
	// Logger is told of the attempts that got no answer. Required.
	Logger lager.Logger
}

// NewCellCalls makes the calls of board's cell.
func NewCellCalls[K comparable](board *client.CellClient, cfg CellCallsConfig[K]) (*CellCalls[K], error) {
	switch {
	case board == nil:
		return nil, errors.New("CellCalls: a cell client is required")
	case cfg.RetryInterval <= 0:
		return nil, errors.New("CellCallsConfig.RetryInterval must be positive")
	case cfg.UnroutableRetryTimeout <= 0:
		return nil, errors.New("CellCallsConfig.UnroutableRetryTimeout must be positive")
	case cfg.FinalCallTimeout < 0:
		return nil, errors.New("CellCallsConfig.FinalCallTimeout must not be negative")
	}
	return &CellCalls[K]{board: board, gate: NewCallGate[K](), cfg: cfg}, nil
}

// Gate is the gate the calls go through: a bulk report's instances are
// taken with Gate().Report, and a caller that must keep an instance out
// of reports across several calls (or while it records an answer) holds
// Gate().BeginCall around them.
func (c *CellCalls[K]) Gate() *CallGate[K] {
	return c.gate
}

// PresenceRenewal is how often a cell heartbeats: every third of the
// presence TTL the board answers with, so that two heartbeats may be lost
// before its presence runs out.
func PresenceRenewal(ttl time.Duration) time.Duration {
	return max(ttl/3, 10*time.Millisecond)
}

// Heartbeat registers the cell (freshStart: the cell runs nothing of what
// the board may think it runs) or renews its presence. One attempt: the
// caller heartbeats again soon anyway.
func (c *CellCalls[K]) Heartbeat(ctx context.Context, cell *models.Cell, freshStart bool) (*client.HeartbeatResult, error) {
	return c.board.Heartbeat(ctx, cell, freshStart)
}

// Register registers the cell again without a fresh start, as a cell
// that comes back after going silent does; it returns the presence TTL.
func (c *CellCalls[K]) Register(ctx context.Context, cell *models.Cell) (time.Duration, error) {
	return c.board.RegisterCell(ctx, cell)
}

// Claim claims the instance's row, repeated until the board answers. A
// claim whose answer is lost (the board died, or the connection broke,
// after it wrote the claim) may hold: its row would stay CLAIMED by an
// instance nobody runs, which no report corrects. A claim under the same
// instance guid on the same cell is answered with the row as it is, one
// claimed by anyone else is refused, so repeating it is safe.
func (c *CellCalls[K]) Claim(ctx context.Context, about CallAbout[K]) (*models.ActualLRP, error) {
	var claimed *models.ActualLRP
	err := c.untilAnswered(ctx, about, "claim", func(ctx context.Context) error {
		var err error
		claimed, err = c.board.ClaimActualLRP(ctx, about.Instance)
		return err
	})
	return claimed, err
}

// Start tells the board the instance runs, routable, at netInfo. One
// attempt: the instance runs whether the board heard of it or not, and
// the next bulk report says RUNNING too. A caller that records the answer
// holds the gate around Start (see Gate), so that no report taken before
// the record says otherwise.
func (c *CellCalls[K]) Start(ctx context.Context, about CallAbout[K], netInfo *models.NetInfo) (*models.ActualLRP, error) {
	var started *models.ActualLRP
	err := c.once(ctx, about, func(ctx context.Context) error {
		var err error
		started, err = c.board.StartActualLRP(ctx, about.Instance, netInfo, true)
		return err
	})
	return started, err
}

// Crash tells the board the instance crashed, repeated until the board
// answers: otherwise its row would stay RUNNING, and routable, on a dead
// process. The reason is cleaned first (models.CleanReason): one built
// from what a process printed may hold bytes the board refuses.
func (c *CellCalls[K]) Crash(ctx context.Context, about CallAbout[K], reason string) (*models.ActualLRP, error) {
	reason = models.CleanReason(reason)
	var crashed *models.ActualLRP
	err := c.untilAnswered(ctx, about, "crash", func(ctx context.Context) error {
		var err error
		crashed, err = c.board.CrashActualLRP(ctx, about.Instance, reason)
		return err
	})
	return crashed, err
}

// Remove removes the instance's row of presence, repeated until the board
// answers (ResourceNotFound and a row that is no longer this instance's
// are answers too: nothing to remove).
func (c *CellCalls[K]) Remove(ctx context.Context, about CallAbout[K], presence models.ActualLRP_Presence) error {
	return c.untilAnswered(ctx, about, "remove", func(ctx context.Context) error {
		return c.board.RemoveActualLRP(ctx, about.Instance, presence)
	})
}

// RemoveLeftover removes a row an earlier rep of this cell left behind:
// nothing runs it. One attempt, outside the gate (the cell runs nothing
// the row names); the next list finds the row again if it failed.
func (c *CellCalls[K]) RemoveLeftover(ctx context.Context, instance client.Instance, presence models.ActualLRP_Presence) error {
	return c.board.RemoveActualLRP(ctx, instance, presence)
}

// Evacuate hands the instance over to a replacement elsewhere; keepRunning
// says the board keeps its row as EVACUATING until the replacement runs.
// One attempt: the evacuation asks again.
func (c *CellCalls[K]) Evacuate(ctx context.Context, about CallAbout[K]) (keepRunning bool, err error) {
	err = c.once(ctx, about, func(ctx context.Context) error {
		var err error
		keepRunning, err = c.board.EvacuateActualLRP(ctx, about.Instance)
		return err
	})
	return keepRunning, err
}

// MarkUnroutable tells the board that the instance takes no more
// requests: routers learn it from the board, and an instance stopped while
// they still send it requests fails those requests. A call that gets no
// answer (a transport failure, or Unavailable: the board cannot reach its
// database; see Answered) is tried again every RetryInterval. When the
// board has said nothing at all for UnroutableRetryTimeout (each attempt
// is cut at what is left of it), MarkUnroutable gives up and the stop goes
// ahead anyway: the board may be gone for good, and an instance it wants
// stopped must not run forever. An Unavailable answer starts that timeout
// again: the board is there and the row stays routable until its database
// is back, however long that takes, so the instance serves until then.
// Any other answer ends the retries, an error too: ResourceNotFound or a
// row that is no longer this instance's leave nothing to unroute. Once ctx
// has ended it does not retry. It returns the last attempt's error.
//
// Worked example, UnroutableRetryTimeout 10 s, the database frozen from
// 0 s to 12.5 s, the board's database timeout 1 s:
//  1. At 0 s the stop begins; attempts at 0, 1.2, 2.4, ... s each get
//     Unavailable after 1 s, and each moves the deadline to 10 s past it.
//  2. At 12.5 s the database answers; the next attempt marks the row
//     unroutable, and only then come the grace period and SIGTERM.
//  3. Had the board itself been gone (no answer at all), the deadline
//     would have stayed at 10 s and the instance stopped then.
func (c *CellCalls[K]) MarkUnroutable(ctx context.Context, about CallAbout[K], presence models.ActualLRP_Presence, netInfo *models.NetInfo) error {
	started := time.Now()
	deadline := started.Add(c.cfg.UnroutableRetryTimeout)
	for attempt := 1; ; attempt++ {
		if c.heldBack() {
			// No attempt, so the board has not failed to answer one.
			deadline = time.Now().Add(c.cfg.UnroutableRetryTimeout)
			if !sleepCtx(ctx, c.cfg.RetryInterval) {
				return ctx.Err()
			}
			continue
		}
		attemptCtx, cancel := context.WithDeadline(ctx, deadline)
		err := c.once(attemptCtx, about, func(ctx context.Context) error {
			_, err := c.board.SetRoutable(ctx, about.Instance, presence, netInfo, false)
			return err
		})
		cancel()
		if ctx.Err() != nil {
			return err
		}
		if Answered(err) {
			if err != nil {
				about.Logger.Info("unroutable-call-refused", lager.Data{"error": err.Error()})
			} else if attempt > 1 {
				about.Logger.Info("unroutable", lager.Data{"attempts": attempt})
			}
			return err
		}
		about.Logger.Info("unroutable-call-failed", lager.Data{"attempt": attempt, "error": err.Error()})
		if models.IsErrorType(err, models.Error_Unavailable) {
			deadline = time.Now().Add(c.cfg.UnroutableRetryTimeout)
		}
		left := time.Until(deadline)
		if left <= 0 {
			about.Logger.Info("gave-up-marking-unroutable", lager.Data{
				"attempts": attempt, "after": time.Since(started).Round(time.Millisecond).String(),
			})
			return err
		}
		if !sleepCtx(ctx, min(c.cfg.RetryInterval, left)) {
			return err
		}
	}
}

// BulkReport tells the board what the cell runs: reported, whose
// instances keys the caller took into the report with Gate().Report. One
// attempt: the cell reports again soon. Once the board answered, or the
// call failed, the calls that waited for the report's instances go.
func (c *CellCalls[K]) BulkReport(ctx context.Context, reported []*models.ReportedInstance, keys []K) (*client.BulkReportResult, error) {
	defer c.gate.ReportAnswered(keys...)
	return c.board.BulkReport(ctx, reported)
}

// ReportHealth sends a health report (never repeated: see
// client.CellClient.ReportHealth).
func (c *CellCalls[K]) ReportHealth(ctx context.Context, health []*models.DefinitionHealth) error {
	return c.board.ReportHealth(ctx, health)
}

// ReportOccupancy sends what instances said of themselves; it returns how
// many changes the board applied. One attempt: a bulk report carries every
// instance's occupancy too.
func (c *CellCalls[K]) ReportOccupancy(ctx context.Context, changes []*models.OccupancyChange) (int, error) {
	return c.board.ReportOccupancy(ctx, changes)
}

// once makes one call about an instance, kept out of bulk reports.
func (c *CellCalls[K]) once(ctx context.Context, about CallAbout[K], call func(context.Context) error) error {
	c.gate.BeginCall(about.Key)
	defer func() {
		c.gate.EndCall(about.Key)
		if c.cfg.CallEnded != nil {
			c.cfg.CallEnded(about.Key)
		}
	}()
	return call(ctx)
}

// untilAnswered repeats a call after transport failures and Unavailable
// answers (see Answered), every RetryInterval, until the board answers.
// Once ctx has ended it makes one last attempt of FinalCallTimeout, or
// none when that is zero.
func (c *CellCalls[K]) untilAnswered(ctx context.Context, about CallAbout[K], what string, call func(context.Context) error) error {
	for {
		if ctx.Err() != nil {
			if c.cfg.FinalCallTimeout == 0 {
				return ctx.Err()
			}
			final, cancel := context.WithTimeout(context.Background(), c.cfg.FinalCallTimeout)
			defer cancel()
			return c.once(final, about, call)
		}
		if !c.heldBack() {
			err := c.once(ctx, about, call)
			if Answered(err) {
				return err
			}
			if ctx.Err() == nil {
				about.Logger.Info("board-unreachable-retrying", lager.Data{"call": what, "error": err.Error()})
			}
		}
		sleepCtx(ctx, c.cfg.RetryInterval)
	}
}

func (c *CellCalls[K]) heldBack() bool {
	return c.cfg.HoldBack != nil && c.cfg.HoldBack()
}
