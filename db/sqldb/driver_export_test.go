package sqldb

import (
	"context"
	"database/sql"
	"math/rand/v2"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// WithoutFastPaths makes the store run the general transactional path of
// every call its driver has an optional fast verb for (desire, update, the
// lifecycle calls, remove, event append and move, batched actual writes,
// created inserts), on the same database: the other side of the fast
// paths' differential specs. The lease upsert is not switched off: MySQL's
// is its only form (MySQL cannot run the ON CONFLICT upsert), so its
// spec compares it with the general upsert on the other databases.
func WithoutFastPaths() Option {
	return func(s *SQLDB) { s.driver = generalOnly{s.driver} }
}

// generalOnly is a driver whose optional fast verbs all decline.
type generalOnly struct{ driver }

func (generalOnly) desireNew() func(*SQLDB, context.Context, *models.DesiredLRP, []any, *models.DesireLRPRequest) (*models.Operation, error) {
	return nil
}

func (generalOnly) updateNow() updateNowFunc {
	return nil
}

func (generalOnly) lifecycle() lifecycleFunc {
	return nil
}

func (generalOnly) appendEvents() func(*SQLDB, context.Context, *sql.Tx, outboxRows, []byte) error {
	return nil
}

func (generalOnly) moveEvents() func(*SQLDB, context.Context, *sql.Tx, int64, int) (int, int64, error) {
	return nil
}

func (generalOnly) writeActualLRPs() func(*SQLDB, context.Context, queryer, []rowWrite) error {
	return nil
}

func (generalOnly) insertCreated() func([]*models.ActualLRP, int64) (string, []any) {
	return nil
}

// HasFastPaths reports whether the store's driver has any optional fast
// verb, so that a differential spec can tell it compares two paths.
func (s *SQLDB) HasFastPaths() bool {
	d := s.driver
	return d.desireNew() != nil || d.updateNow() != nil || d.lifecycle() != nil || d.appendEvents() != nil ||
		d.moveEvents() != nil || d.writeActualLRPs() != nil || d.insertCreated() != nil
}

// AcquireLeaseIsUpsert reports whether the store's lease write is the
// general ON CONFLICT upsert (false: the driver has its own).
func (s *SQLDB) AcquireLeaseIsUpsert() bool { return s.driver.name() != dialect.MySQL }

// HoldWrites keeps every coalescing lane busy, so that API writes queue
// until the returned release, which lets each lane write its queue as one
// group: a spec's way to put chosen writes in one group.
func (s *SQLDB) HoldWrites() (release func()) {
	for _, l := range s.coalescer.lanes {
		l.mu.Lock()
		l.writing = true
		l.mu.Unlock()
	}
	return func() {
		for _, l := range s.coalescer.lanes {
			go s.coalescer.drain(l)
		}
	}
}

// QueuedWrites is how many API writes wait on the coalescing lanes.
func (s *SQLDB) QueuedWrites() int {
	n := 0
	for _, l := range s.coalescer.lanes {
		l.mu.Lock()
		n += len(l.queue)
		l.mu.Unlock()
	}
	return n
}

// WithEveryCommitFaulted makes every write transaction's first commit fail
// with the fault named kind: "conflict", "lost-before", "lost-after" or
// "lost-after-logged" (the last three where the database keeps receipts:
// not SQLite).
func WithEveryCommitFaulted(kind string) Option {
	return func(s *SQLDB) {
		only := map[string]commitFault{"conflict": faultConflict, "lost-before": faultLostBeforeCommit, "lost-after": faultLostAfterCommit,
			"lost-after-logged": faultLostAfterLogged}[kind]
		if only == faultNone {
			panic("unknown commit fault " + kind)
		}
		s.faults = &commitFaults{rng: rand.New(rand.NewPCG(1, 2)), oneIn: 1, only: only}
	}
}

// HasEventMoveFastPath reports whether the named dialect's driver moves
// events from the outbox into the log with a fast verb of its own.
func HasEventMoveFastPath(dialectName string) bool {
	d, err := newDriver(dialectName)
	return err == nil && d.moveEvents() != nil
}

// IdleTransactionLimit is how long the board's database keeps a
// transaction the board left idle (postgresDSN, idleTransactionBound).
const IdleTransactionLimit = idleTransactionLimit

// InWriteTransaction runs fn in one of the store's write transactions.
func (s *SQLDB) InWriteTransaction(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.transact(ctx, "test write", fn)
}

// HasWriter reports whether pool runs its write transactions on a writer
// (writer.go).
func HasWriter(pool *sql.DB) bool {
	_, ok := writers.Load(pool)
	return ok
}
