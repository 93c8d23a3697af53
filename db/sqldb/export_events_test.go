package sqldb

import (
	"sync"
	"time"
)

// Seams for the tests of publishing in order.

// SetStripeWait shortens how long a commit waits for its ordering stripes.
func SetStripeWait(d time.Duration) (restore func()) {
	old := stripeWait
	stripeWait = d
	return func() { stripeWait = old }
}

// HoldStripe takes the ordering stripe of key, as a single-statement write
// does while it runs. Release may be called more than once.
func (s *SQLDB) HoldStripe(key string) (release func()) {
	unlock, _ := s.order.lockKeys([]string{key}, nil)
	return sync.OnceFunc(unlock)
}
