package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/db"
)

// LeaseName is the lease a board must own to converge.
const LeaseName = "convergence"

var (
	errLeaseTaken   = errors.New("another board owns the convergence lease")
	errLeaseExpired = errors.New("the convergence lease expired before it could be renewed")
	errStopping     = errors.New("the runner is stopping")
)

// leaseKeeper takes the convergence lease and renews it every ttl/3. Each
// unbroken stretch of holding it is a tenure: a context that is cancelled
// the moment the lease is lost, so that whatever converges under it stops
// at once.
//
// The lease is lost when the database says another board owns it, and
// also when it could not be renewed before it expires: the keeper arms a
// timer for ttl after the start of each successful acquisition, which is
// no later than the expiry the database recorded. A renewal that merely
// fails (the database is unreachable, say) does not end the tenure by
// itself, since the board still owns the lease until then.
type leaseKeeper struct {
	logger lager.Logger
	store  db.LeaseDB
	owner  string
	ttl    time.Duration
	owned  func(bool)

	mu     sync.Mutex
	tenure context.Context
	number int64 // the tenure's number (db/rowlock)
	end    context.CancelCauseFunc
	expiry *time.Timer
	// changed is signalled whenever a tenure begins.
	changed chan struct{}
}

func newLeaseKeeper(logger lager.Logger, store db.LeaseDB, owner string, ttl time.Duration, owned func(bool)) *leaseKeeper {
	return &leaseKeeper{
		logger:  logger.Session("lease", lager.Data{"name": LeaseName, "owner": owner, "ttl": ttl.String()}),
		store:   store,
		owner:   owner,
		ttl:     ttl,
		owned:   owned,
		changed: make(chan struct{}, 1),
	}
}

// keep acquires and renews the lease until ctx ends, then ends the tenure
// and gives the lease up, so that another board need not wait for it to
// expire.
func (k *leaseKeeper) keep(ctx context.Context) {
	renew := time.NewTicker(k.ttl / 3)
	defer renew.Stop()
	for {
		k.attempt(ctx)
		select {
		case <-ctx.Done():
			k.release()
			return
		case <-renew.C:
		}
	}
}

func (k *leaseKeeper) attempt(ctx context.Context) {
	started := time.Now()
	attemptCtx, cancel := context.WithTimeout(ctx, k.ttl/3)
	defer cancel()
	number, err := k.store.AcquireLease(attemptCtx, LeaseName, k.owner, k.ttl)
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		// Still ours until the expiry timer says otherwise.
		k.logger.Error("renew-failed", err)
	case number == 0:
		k.endTenure(errLeaseTaken)
	default:
		k.extend(ctx, number, started.Add(k.ttl))
	}
}

// extend begins a tenure, or keeps the current one alive until validUntil.
// A tenure has a number, the lease row's: its context carries it as a
// fence (db.WithFence), so that every write made under it is refused by
// the database once another board took the lease, even before this board
// notices. A number that moved under a live tenure (not expected: the
// expiry timer fires before the database's expiry) ends it.
func (k *leaseKeeper) extend(ctx context.Context, number int64, validUntil time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tenure != nil && k.tenure.Err() == nil {
		if k.number == number {
			k.expiry.Reset(time.Until(validUntil))
			return
		}
		k.endLocked(errLeaseExpired)
	}
	fenced := db.WithFence(ctx, db.Fence{Lease: LeaseName, Owner: k.owner, Tenure: number})
	tenure, end := context.WithCancelCause(fenced)
	k.tenure, k.end, k.number = tenure, end, number
	k.expiry = time.AfterFunc(time.Until(validUntil), func() { k.endTenureOf(tenure, errLeaseExpired) })
	k.logger.Info("acquired", lager.Data{"tenure": number})
	k.owned(true)
	select {
	case k.changed <- struct{}{}:
	default:
	}
}

func (k *leaseKeeper) endTenure(cause error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.endLocked(cause)
}

// endTenureOf ends tenure if it is still the current one: an expiry timer
// that fired just as a renewal re-armed it must not end a later tenure.
func (k *leaseKeeper) endTenureOf(tenure context.Context, cause error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tenure == tenure {
		k.endLocked(cause)
	}
}

func (k *leaseKeeper) endLocked(cause error) {
	if k.tenure == nil {
		return
	}
	if k.tenure.Err() == nil {
		k.logger.Info("lost", lager.Data{"reason": cause.Error()})
	}
	k.expiry.Stop()
	k.end(cause)
	k.tenure, k.end, k.expiry = nil, nil, nil
	k.owned(false)
}

// current returns the live tenure, or nil when the lease is not owned.
func (k *leaseKeeper) current() context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tenure == nil || k.tenure.Err() != nil {
		return nil
	}
	return k.tenure
}

// waitForTenure blocks until the board owns the lease, and returns that
// tenure; nil when ctx ends first.
func (k *leaseKeeper) waitForTenure(ctx context.Context) context.Context {
	for {
		if tenure := k.current(); tenure != nil {
			return tenure
		}
		select {
		case <-ctx.Done():
			return nil
		case <-k.changed:
		}
	}
}

// release ends the tenure and, if the board owned the lease, hands it back.
func (k *leaseKeeper) release() {
	k.mu.Lock()
	hadTenure := k.tenure != nil
	k.endLocked(errStopping)
	k.mu.Unlock()
	if !hadTenure {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.ttl/3)
	defer cancel()
	if err := k.store.ReleaseLease(ctx, LeaseName, k.owner); err != nil {
		k.logger.Error("release-failed", err)
		return
	}
	k.logger.Info("released")
}
