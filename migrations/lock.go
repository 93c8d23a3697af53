package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// session is one connection that holds the migration lock. Everything the
// runner reads or writes while migrating goes through it.
//
// The lock differs per dialect (driver.lock, in driver_<dialect>.go):
//   - Postgres: pg_advisory_lock on a fixed key. Advisory locks are scoped to
//     the current database and released when the session ends, so a board
//     that dies mid-migration does not leave the lock behind.
//   - MySQL: GET_LOCK on a name that includes DATABASE() (MySQL's named locks
//     are server-wide), also released when the connection closes.
//   - SQLite: the run's transaction is the lock. It starts with BEGIN
//     IMMEDIATE, which takes SQLite's single write lock up front, so a second
//     board waits at BEGIN and, once in, sees the finished schema.
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
}

// lockPoll is how often a waiting SQLite run tries for the lock again.
const lockPoll = 50 * time.Millisecond

func lock(ctx context.Context, db *sql.DB, dialect string) (*session, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	s := &session{dialect: dialect, conn: conn, q: conn}
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
