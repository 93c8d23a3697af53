package sqldb

import "context"

// autocommit runs write, one or more statements that are each their own
// transaction and emit no events, like transact does a transaction: on
// SQLite under the write lock, and again after a deadlock, serialization
// failure or busy database, at most maxAttempts times in all.
//
// Every write run here is idempotent — a lease's renewal or release, a
// cell's registration, a prune — so one whose connection broke, which may
// or may not have applied, runs once more rather than failing: with the
// pool's next connection (to a new primary, after a failover) it applies
// or finds itself applied. The error returned is a *models.Error.
func (s *SQLDB) autocommit(ctx context.Context, op string, write func() error) error {
	var err error
	retriedLostConnection := false
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if waitErr := sleep(ctx, backoff(attempt-1)); waitErr != nil {
				return asModelError(op, err)
			}
		}
		err = s.underWriteLock(s.withFault(write, attempt == 1))
		if err != nil && !retriedLostConnection && ctx.Err() == nil && isUnreachable(err) {
			retriedLostConnection = true
			continue
		}
		if err == nil || !isRetryable(err) {
			break
		}
	}
	return asModelError(op, err)
}

func (s *SQLDB) underWriteLock(write func() error) error {
	if s.writeLock != nil {
		s.writeLock.Lock()
		defer s.writeLock.Unlock()
	}
	return write()
}
