package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// session is one connection that holds the migration lock. Everything the
// runner reads or writes while migrating goes through it.
//
// The lock differs per dialect:
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

const (
	postgresLockKey = 7_316_002_417_830_113 // arbitrary, fixed: "corkboard migrations"
	lockPoll        = 50 * time.Millisecond
)

func lock(ctx context.Context, db *sql.DB, dialect string) (*session, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	s := &session{dialect: dialect, conn: conn, q: conn}
	switch dialect {
	case Postgres:
		err = lockPostgres(ctx, s)
	case MySQL:
		err = lockMySQL(ctx, s)
	case SQLite:
		err = lockSQLite(ctx, s)
	default:
		err = fmt.Errorf("unknown database dialect %q", dialect)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	return s, nil
}

func lockPostgres(ctx context.Context, s *session) error {
	if _, err := s.conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", postgresLockKey); err != nil {
		return err
	}
	unlock := func() error {
		_, err := s.conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", postgresLockKey)
		return errors.Join(err, s.conn.Close())
	}
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return errors.Join(err, unlock())
	}
	s.tx, s.q = tx, tx
	s.release = func() error {
		// Rollback after a commit is a no-op (sql.ErrTxDone).
		if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
			return errors.Join(err, unlock())
		}
		return unlock()
	}
	return nil
}

func lockMySQL(ctx context.Context, s *session) error {
	const name = "CONCAT('corkboard_migrations:', DATABASE())"
	for {
		var got sql.NullInt64
		// A short server-side wait, repeated, so a cancelled context is noticed.
		if err := s.conn.QueryRowContext(ctx, "SELECT GET_LOCK("+name+", 2)").Scan(&got); err != nil {
			return err
		}
		if !got.Valid {
			return errors.New("GET_LOCK returned NULL")
		}
		if got.Int64 == 1 {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	s.release = func() error {
		_, err := s.conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK("+name+")")
		return errors.Join(err, s.conn.Close())
	}
	return nil
}

func lockSQLite(ctx context.Context, s *session) error {
	for {
		_, err := s.conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil {
			break
		}
		if !isSQLiteBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
	s.release = func() error {
		// After a successful commit there is no transaction and this is a
		// harmless error; after a failure it undoes everything.
		s.conn.ExecContext(context.Background(), "ROLLBACK")
		return s.conn.Close()
	}
	return nil
}

// finish commits the run's transaction; on MySQL every migration has
// already committed its own changes.
func (s *session) finish(ctx context.Context) error {
	switch s.dialect {
	case Postgres:
		return s.tx.Commit()
	case SQLite:
		_, err := s.conn.ExecContext(ctx, "COMMIT")
		return err
	}
	return nil
}

func isSQLiteBusy(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		const sqliteBusy, sqliteLocked = 5, 6
		code := coded.Code() & 0xff // extended codes keep the primary in the low byte
		return code == sqliteBusy || code == sqliteLocked
	}
	return false
}
