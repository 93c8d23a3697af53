package migrations

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/rowlock"
)

// session is one connection that holds the migration lock. Everything the
// runner reads or writes while migrating goes through it.
//
// The lock differs per dialect (driver.lock, in driver_<dialect>.go):
//   - Postgres and MySQL: a lock row (db/rowlock) in migration_lock, with
//     an expiry renewed while the run lasts and a tenure number checked
//     before each migration (lockRow, checkFence). Unlike an advisory lock
//     or GET_LOCK it works across a Galera cluster's nodes (GET_LOCK is
//     node-local) and a Postgres failover (advisory locks stay on the old
//     primary). A board that dies mid-migration leaves the row to expire
//     (migrationLockTTL).
//   - SQLite: the run's transaction is the lock. It starts with BEGIN
//     IMMEDIATE, which takes SQLite's single write lock up front, so a second
//     board waits at BEGIN and, once in, sees the finished schema. SQLite is
//     one file on one machine: there is no failover to survive.
//
// Postgres and SQLite have transactional DDL, so there the whole run is one
// transaction (q): all of it lands or none of it does. MySQL commits DDL as
// it goes; there q is the bare connection and the dirty mark covers the gap.
type session struct {
	dialect string
	conn    *sql.Conn
	q       querier
	tx      *sql.Tx // Postgres only
	release func() error

	// The lock row, where the dialect locks by row (lockRow): the pool
	// it was taken on, this run's owner name and tenure, and the renewal's
	// stop.
	pool        *sql.DB
	owner       string
	tenure      int64
	stopRenewal context.CancelFunc
	renewed     chan struct{} // closed when the renewal has stopped
}

// lockPoll is how often a waiting SQLite run tries for the lock again.
const lockPoll = 50 * time.Millisecond

func lock(ctx context.Context, db *sql.DB, dialect string) (*session, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	s := &session{dialect: dialect, conn: conn, q: conn, pool: db}
	if d, ok := drivers[dialect]; ok {
		err = d.lock(ctx, s)
	} else {
		err = fmt.Errorf("unknown database dialect %q", dialect)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	return s, nil
}

// finish commits the run's transaction; on MySQL every migration has
// already committed its own changes.
func (s *session) finish(ctx context.Context) error { return driverOf(s.dialect).finish(ctx, s) }

// The migration lock row: table, name and time to live. The run renews it
// every third of its TTL; a board that dies mid-migration keeps it up to
// a TTL longer.
const (
	migrationLockTable = "migration_lock"
	migrationLockName  = "migrations"
	migrationLockTTL   = 30 * time.Second
)

// migrationLockDDL creates the lock's table where it is missing. It is not
// a migration: it must exist before the first one runs. Its types are
// every dialect's.
const migrationLockDDL = `CREATE TABLE IF NOT EXISTS migration_lock (
  name       VARCHAR(64)  NOT NULL PRIMARY KEY,
  owner      VARCHAR(255) NOT NULL,
  expires_at BIGINT       NOT NULL,
  tenure      BIGINT       NOT NULL DEFAULT 0
)`

// lockRow takes the migration lock row, waiting while another run owns
// it, and renews it in the background until unlockRow. Its statements run
// on the pool, not the run's connection: a renewal must not wait for the
// run's transaction.
func (s *session) lockRow(ctx context.Context) error {
	d := sqldialect.Name(s.dialect)
	for tries := 1; ; tries++ {
		_, err := s.pool.ExecContext(ctx, migrationLockDDL)
		if err == nil {
			break
		}
		if tries == maxLockRowFailures {
			return fmt.Errorf("create %s: %w", migrationLockTable, err)
		}
		// Two boards creating the table at once: one may fail on the
		// catalogue's keys (Postgres); the table is there on the next try.
		select {
		case <-ctx.Done():
			return fmt.Errorf("create %s: %w", migrationLockTable, err)
		case <-time.After(lockPoll):
		}
	}
	s.owner = lockOwner()
	failures := 0
	for {
		tenure, err := rowlock.Acquire(ctx, s.pool, d, migrationLockTable, migrationLockName, s.owner, migrationLockTTL)
		switch {
		case err != nil && ctx.Err() == nil && failures < maxLockRowFailures:
			// Boards racing for the row on different Galera nodes: all
			// but one fail certification (1213) and ask again; so do
			// those whose upsert met another node's DDL.
			failures++
		case err != nil:
			return err
		default:
			failures, s.tenure = 0, tenure
		}
		if s.tenure != 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rowLockPoll):
		}
	}
	renewCtx, stop := context.WithCancel(context.Background())
	s.stopRenewal, s.renewed = stop, make(chan struct{})
	go s.renew(renewCtx, d)
	return nil
}

// rowLockPoll is how often a run waiting for the lock row asks again.
const rowLockPoll = 200 * time.Millisecond

// maxLockRowFailures bounds the failed tries in a row, to create the lock
// row's table or to take the row, before the run gives up with the last
// error.
const maxLockRowFailures = 20

// renew keeps the lock row alive until ctx ends. A renewal that finds the
// lock taken changes nothing; the run's next fence check then stops it.
func (s *session) renew(ctx context.Context, d sqldialect.Name) {
	defer close(s.renewed)
	tick := time.NewTicker(migrationLockTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		attempt, cancel := context.WithTimeout(ctx, migrationLockTTL/3)
		rowlock.Acquire(attempt, s.pool, d, migrationLockTable, migrationLockName, s.owner, migrationLockTTL)
		cancel()
	}
}

// checkFence fails unless this run still owns the lock row in its tenure.
// On Postgres it runs in the run's transaction and share-locks the row
// until the commit, so nobody takes the lock before the run lands; on
// MySQL, where each DDL statement commits, it stops a run whose lock was
// taken over before its next migration. SQLite's lock is its transaction.
func (s *session) checkFence(ctx context.Context) error {
	if s.owner == "" {
		return nil
	}
	if err := rowlock.Check(ctx, s.q, sqldialect.Name(s.dialect), migrationLockTable, migrationLockName, s.owner, s.tenure); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	return nil
}

// unlockRow stops the renewal, gives the lock row up and closes the run's
// connection.
func (s *session) unlockRow() error {
	s.stopRenewal()
	<-s.renewed
	ctx, cancel := context.WithTimeout(context.Background(), migrationLockTTL/3)
	defer cancel()
	err := rowlock.Release(ctx, s.pool, sqldialect.Name(s.dialect), migrationLockTable, migrationLockName, s.owner)
	return errors.Join(err, s.conn.Close())
}

// lockOwner names this run: host, process and a random part, so that two
// runs of one process are two owners.
func lockOwner() string {
	host, _ := os.Hostname()
	var random [6]byte
	rand.Read(random[:])
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), random)
}
