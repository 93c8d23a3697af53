package migrations

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Status is where a database stands against this binary's migrations.
type Status struct {
	Dialect string
	// Latest is the highest version this binary knows; Current the highest
	// the database has applied (0 for none).
	Latest, Current int
	// Dirty is set when a migration started and did not finish.
	Dirty bool
	// Classic is set when the database holds a classic BBS schema that the
	// next Up will move aside and import.
	Classic bool
	// Migrations are this binary's, in order, with what the database says
	// about each.
	Migrations []MigrationStatus
	// Unknown are applied migrations this binary does not know: the database
	// is newer than the binary.
	Unknown []AppliedMigration
}

// MigrationStatus is one embedded migration and its row in schema_migrations.
type MigrationStatus struct {
	Migration
	Applied         bool
	AppliedName     string
	AppliedChecksum string
	AppliedAt       time.Time
	Dirty           bool
}

// Modified says the applied migration is not the embedded one.
func (m MigrationStatus) Modified() bool {
	return m.Applied && (m.AppliedChecksum != m.Checksum || m.AppliedName != m.Name)
}

// Pending lists the migrations Up would apply.
func (s *Status) Pending() []Migration {
	var out []Migration
	for _, m := range s.Migrations {
		if !m.Applied || m.Dirty {
			out = append(out, m.Migration)
		}
	}
	return out
}

// Status reads the database's migration state. It takes no lock and
// changes nothing, not even creating the version table.
func (r *Runner) Status(ctx context.Context) (*Status, error) {
	st := &Status{Dialect: r.dialect, Latest: r.Latest()}
	hasTable, err := tableExists(ctx, r.db, r.dialect, "schema_migrations")
	if err != nil {
		return nil, err
	}
	var applied []AppliedMigration
	if hasTable {
		if applied, err = readApplied(ctx, r.db, r.dialect); err != nil {
			return nil, err
		}
	}
	byVersion := map[int]AppliedMigration{}
	for _, a := range applied {
		byVersion[a.Version] = a
		st.Current = max(st.Current, a.Version)
		st.Dirty = st.Dirty || a.Dirty
		if a.Version > r.Latest() {
			st.Unknown = append(st.Unknown, a)
		}
	}
	for _, m := range r.migrations {
		ms := MigrationStatus{Migration: m}
		if a, ok := byVersion[m.Version]; ok {
			ms.Applied, ms.AppliedName, ms.AppliedChecksum, ms.AppliedAt, ms.Dirty = true, a.Name, a.Checksum, a.AppliedAt, a.Dirty
		}
		st.Migrations = append(st.Migrations, ms)
	}
	if len(applied) == 0 {
		if st.Classic, err = isClassic(ctx, r.db, r.dialect); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// ValidationError lists why a database does not match this binary.
type ValidationError struct {
	Problems []string
	newer    bool
	dirty    bool
}

func (e *ValidationError) Error() string {
	return ErrNotUpToDate.Error() + ":\n  " + strings.Join(e.Problems, "\n  ")
}

func (e *ValidationError) Is(target error) bool {
	return target == ErrNotUpToDate || (target == ErrDatabaseNewer && e.newer) || (target == ErrDirty && e.dirty)
}

// Validate returns nil when every embedded migration is applied, clean, and
// recorded with the checksum this binary has; otherwise a *ValidationError
// (matching ErrNotUpToDate) naming each problem.
func (r *Runner) Validate(ctx context.Context) error {
	st, err := r.Status(ctx)
	if err != nil {
		return err
	}
	verr := &ValidationError{newer: len(st.Unknown) > 0, dirty: st.Dirty}
	for _, m := range st.Migrations {
		switch {
		case !m.Applied:
			verr.Problems = append(verr.Problems, fmt.Sprintf("%s is pending", m.ID()))
		case m.Dirty:
			verr.Problems = append(verr.Problems, fmt.Sprintf("%s is dirty: it started and did not finish", m.ID()))
		case m.AppliedName != m.Name:
			verr.Problems = append(verr.Problems, fmt.Sprintf("version %04d was applied as %q, this binary calls it %q", m.Version, m.AppliedName, m.Name))
		case m.AppliedChecksum != m.Checksum:
			verr.Problems = append(verr.Problems, fmt.Sprintf("%s was applied with checksum %s, this binary's is %s", m.ID(), m.AppliedChecksum, m.Checksum))
		}
	}
	for _, a := range st.Unknown {
		verr.Problems = append(verr.Problems, fmt.Sprintf("%04d_%s is applied but unknown to this binary (the database is newer)", a.Version, a.Name))
	}
	if len(verr.Problems) > 0 {
		return verr
	}
	return nil
}
