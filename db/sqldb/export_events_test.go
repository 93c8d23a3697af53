package sqldb

import "sync"

// Seams for the tests of publishing in order.

// HoldTicket takes the next event ticket, as a single-statement write does
// before it runs, and returns the function that delivers it without
// events. Deliver may be called more than once.
func (s *SQLDB) HoldTicket() (deliver func()) {
	t := s.order.take()
	return sync.OnceFunc(func() { s.order.deliver(s.events, t, nil) })
}
