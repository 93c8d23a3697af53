package sqldb

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Backoff between attempts: a random wait up to firstBackoff, doubling per
// attempt, never above maxBackoff. Jitter keeps two losers of the same
// deadlock from colliding again.
const (
	firstBackoff = 5 * time.Millisecond
	maxBackoff   = 100 * time.Millisecond
)

// transact runs fn in a transaction and commits it. When fn or the commit
// fails with a deadlock, serialization failure, busy database or a lost
// compare-and-set, the transaction is rolled back and run again, at most
// maxAttempts times in all. fn must therefore be safe to run again: it may
// only change state through tx. The error returned is a *models.Error.
func (s *SQLDB) transact(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	return s.transactPublishing(ctx, op, func(tx *sql.Tx) ([]models.Event, error) {
		return nil, fn(tx)
	})
}

// transactPublishing is transact for writes that emit events: fn returns
// the events describing what it changed, and they are appended to the
// event log in the same transaction (see events.go). Events of an attempt
// that is rolled back are dropped with it.
func (s *SQLDB) transactPublishing(ctx context.Context, op string, fn func(tx *sql.Tx) ([]models.Event, error)) error {
	var err error
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if waitErr := sleep(ctx, backoff(attempt-1)); waitErr != nil {
				return asModelError(op, err)
			}
		}
		var logged bool
		logged, err = s.attempt(ctx, fn, attempt == 1)
		if logged {
			s.eventsCommitted()
		}
		if err == nil || !isRetryable(err) {
			break
		}
	}
	return asModelError(op, err)
}

// attempt runs fn in one transaction and commits it with its events; it
// says whether it committed any.
func (s *SQLDB) attempt(ctx context.Context, fn func(tx *sql.Tx) ([]models.Event, error), firstAttempt bool) (bool, error) {
	if s.writeLock != nil {
		s.writeLock.Lock()
		defer s.writeLock.Unlock()
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return false, err
	}
	events, err := fn(tx)
	if err != nil {
		tx.Rollback()
		return false, err
	}
	if err := s.commit(ctx, tx, events, firstAttempt); err != nil {
		return false, err
	}
	return len(events) > 0, nil
}

// beginWrite begins a write transaction: on SQLite on the writer's
// connection (writer.go). The caller holds writeLock where there is one.
func (s *SQLDB) beginWrite(ctx context.Context) (*sql.Tx, error) {
	if s.writer != nil {
		return s.writer.begin(ctx)
	}
	return s.conn.BeginTx(ctx, nil)
}

// backoff is the wait before retry number n (1 for the first retry).
func backoff(n int) time.Duration {
	ceiling := firstBackoff << (n - 1)
	if ceiling > maxBackoff || ceiling <= 0 {
		ceiling = maxBackoff
	}
	return ceiling/2 + rand.N(ceiling/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// transactKeyed is transactPublishing for an API write on the LRP key:
// while other writes are being written it shares a transaction with them
// (coalesce.go), and else runs as transactPublishing does.
func (s *SQLDB) transactKeyed(ctx context.Context, op, key string, fn func(tx *sql.Tx) ([]models.Event, error)) error {
	return s.writeCoalesced(ctx, key, fn, func() error {
		return s.transactPublishing(ctx, op, fn)
	})
}
