package sqldb

import "context"

// autocommit runs write, one or more statements that are each their own
// transaction and emit no events, like transact does a transaction: on
// SQLite under the write lock, and again after a deadlock, serialization
// failure or busy database, at most maxAttempts times in all. The error
// returned is a *models.Error.
func (s *SQLDB) autocommit(ctx context.Context, op string, write func() error) error {
	var err error
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if waitErr := sleep(ctx, backoff(attempt-1)); waitErr != nil {
				return asModelError(op, err)
			}
		}
		err = s.underWriteLock(write)
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
