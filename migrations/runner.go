package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"time"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
)

// Runner applies and inspects the migrations of one dialect on one database.
type Runner struct {
	db         *sql.DB
	dialect    string
	migrations []Migration
	now        func() time.Time
}

// NewRunner prepares the embedded migrations of dialect for db.
func NewRunner(db *sql.DB, dialect string) (*Runner, error) {
	return newRunner(db, dialect, embedded, registeredSteps)
}

func newRunner(db *sql.DB, dialect string, fsys fs.FS, steps map[int]*goStep) (*Runner, error) {
	ms, err := load(fsys, dialect, steps)
	if err != nil {
		return nil, err
	}
	return &Runner{db: db, dialect: dialect, migrations: ms, now: time.Now}, nil
}

// Up applies every pending migration. It is what the board calls on start:
// a no-op when the schema is current; an error wrapping ErrDatabaseNewer when
// the database is ahead of this binary, and one wrapping ErrDirty when an
// earlier migration was interrupted.
func Up(ctx context.Context, db *sql.DB, dialect string) error {
	r, err := NewRunner(db, dialect)
	if err != nil {
		return err
	}
	_, err = r.Up(ctx, UpOptions{})
	return err
}

// Migrations lists what this binary carries for the runner's dialect.
func (r *Runner) Migrations() []Migration { return append([]Migration(nil), r.migrations...) }

// Latest is the highest version this binary knows.
func (r *Runner) Latest() int { return len(r.migrations) }

// UpOptions tune Runner.Up.
type UpOptions struct {
	// Target stops after this version; 0 means the latest.
	Target int
	// RetryDirty re-runs the migration a dirty database is stuck on instead
	// of refusing. Only for an operator who has fixed what made it fail.
	RetryDirty bool
}

// Up applies the pending migrations up to opts.Target under the migration
// lock and returns the ones it applied (none when the schema is current).
// On Postgres and SQLite a failed run changes nothing; on MySQL the
// migrations before the failing one stay applied and are returned with the
// error.
func (r *Runner) Up(ctx context.Context, opts UpOptions) ([]Migration, error) {
	target, err := r.target(opts.Target)
	if err != nil {
		return nil, err
	}
	s, err := lock(ctx, r.db, r.dialect)
	if err != nil {
		return nil, err
	}
	defer s.release()

	if err := ensureVersionTable(ctx, s.q, r.dialect); err != nil {
		return nil, err
	}
	applied, err := readApplied(ctx, s.q, r.dialect)
	if err != nil {
		return nil, err
	}
	if err := r.checkNotNewer(applied); err != nil {
		return nil, err
	}
	current, err := r.current(applied, opts.RetryDirty)
	if err != nil {
		return nil, err
	}
	if target < current {
		return nil, fmt.Errorf("the database is at version %04d, past target %04d: migrations only go up", current, target)
	}
	if current == 0 {
		if err := moveLegacyAside(ctx, s, r.dialect); err != nil {
			return nil, err
		}
	}
	var done []Migration
	for _, m := range r.migrations[current:target] {
		if err := r.apply(ctx, s, m); err != nil {
			if !driverOf(r.dialect).transactionalDDL() {
				return done, err // these stay applied (MySQL); elsewhere the run rolls back
			}
			return nil, err
		}
		done = append(done, m)
	}
	if len(done) > 0 {
		if err := s.checkFence(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.finish(ctx); err != nil {
		return nil, fmt.Errorf("commit migrations: %w", err)
	}
	return done, nil
}

// current is the version the run starts from: the last applied one, or the
// one before a dirty migration the operator asked to retry.
func (r *Runner) current(applied []AppliedMigration, retryDirty bool) (int, error) {
	for i, a := range applied {
		if a.Version != i+1 {
			return 0, fmt.Errorf("schema_migrations has version %04d but not %04d: it was edited by hand; restore it before migrating", a.Version, i+1)
		}
		if !a.Dirty {
			continue
		}
		if !retryDirty {
			return 0, &DirtyError{Dialect: r.dialect, Version: a.Version, Name: a.Name}
		}
		if i != len(applied)-1 {
			return 0, fmt.Errorf("migration %04d_%s is dirty but later ones are applied: schema_migrations was edited by hand", a.Version, a.Name)
		}
		return a.Version - 1, nil
	}
	return len(applied), nil
}

func (r *Runner) target(t int) (int, error) {
	if t < 0 || t > r.Latest() {
		return 0, fmt.Errorf("target version %d: must be between 1 and %d, the latest this binary knows", t, r.Latest())
	}
	if t == 0 {
		return r.Latest(), nil
	}
	return t, nil
}

func (r *Runner) checkNotNewer(applied []AppliedMigration) error {
	for _, a := range applied {
		if a.Version > r.Latest() {
			return fmt.Errorf("%w: the database has migration %04d_%s applied, and this binary only knows migrations up to %04d; "+
				"run the newer board (or its bbs-migrate) against it", ErrDatabaseNewer, a.Version, a.Name, r.Latest())
		}
	}
	return nil
}

// apply runs one migration with the dirty mark set around it. On Postgres
// and SQLite the mark, the Go step and the statements are part of the run's
// transaction, so the mark is never seen set. On MySQL DDL commits as it
// goes: the mark is committed first and cleared last, so an interrupted
// migration leaves the database dirty.
func (r *Runner) apply(ctx context.Context, s *session, m Migration) error {
	fail := func(stmt string, err error) error { return &MigrationError{Migration: m, Statement: stmt, Err: err} }
	if err := s.checkFence(ctx); err != nil {
		return fail("", err)
	}
	if err := r.markDirty(ctx, s.q, m); err != nil {
		return fail("", err)
	}
	if m.Step != nil {
		if err := r.runStep(ctx, s, m); err != nil {
			return fail("", err)
		}
	}
	for _, stmt := range m.Statements {
		if _, err := s.q.ExecContext(ctx, stmt); err != nil {
			return fail(stmt, err)
		}
	}
	if _, err := s.q.ExecContext(ctx, sqldialect.Rebind(sqldialect.Name(r.dialect), "UPDATE schema_migrations SET dirty = ? WHERE version = ?"), false, m.Version); err != nil {
		return fail("", err)
	}
	return nil
}

// runStep runs a migration's Go code. On MySQL it gets a transaction of its
// own, so its row changes land together; elsewhere it is part of the run's.
func (r *Runner) runStep(ctx context.Context, s *session, m Migration) error {
	if driverOf(r.dialect).transactionalDDL() {
		return m.Step.Run(ctx, stepEnv{q: s.q, dialect: r.dialect, now: r.now})
	}
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := m.Step.Run(ctx, stepEnv{q: tx, dialect: r.dialect, now: r.now}); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

func (r *Runner) markDirty(ctx context.Context, q querier, m Migration) error {
	if _, err := q.ExecContext(ctx, sqldialect.Rebind(sqldialect.Name(r.dialect), "DELETE FROM schema_migrations WHERE version = ?"), m.Version); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, sqldialect.Rebind(sqldialect.Name(r.dialect),
		"INSERT INTO schema_migrations (version, name, checksum, applied_at, dirty) VALUES (?, ?, ?, ?, ?)"),
		m.Version, m.Name, m.Checksum, r.now().UnixNano(), true)
	return err
}
