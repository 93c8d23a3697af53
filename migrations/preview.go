package migrations

import (
	"context"
	"fmt"
	"strings"
)

// Preview is what Up would do, computed without changing the database
// (bbs-migrate plan prints it).
type Preview struct {
	Dialect         string
	From, To        int
	CreateTable     string   // the version table's DDL when it does not exist yet
	MoveClassicAway []string // DDL moving a classic BBS schema's tables aside
	Steps           []PreviewStep
}

// PreviewStep is one migration Up would apply.
type PreviewStep struct {
	Migration
	// GoStep says what the migration's Go step would do on this database.
	GoStep string
}

// Empty says Up would do nothing.
func (p *Preview) Empty() bool { return len(p.Steps) == 0 }

// Preview computes what Up with opts would run. It takes no lock and writes
// nothing; the checks that make Up refuse (dirty, newer, bad target) make
// Preview refuse the same way.
func (r *Runner) Preview(ctx context.Context, opts UpOptions) (*Preview, error) {
	target, err := r.target(opts.Target)
	if err != nil {
		return nil, err
	}
	st, err := r.Status(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.checkNotNewer(st.Unknown); err != nil {
		return nil, err
	}
	p := &Preview{Dialect: r.dialect, From: st.Current}
	for _, m := range st.Migrations {
		if m.Dirty {
			if !opts.RetryDirty {
				return nil, &DirtyError{Dialect: r.dialect, Version: m.Version, Name: m.Name}
			}
			p.From = m.Version - 1
		}
	}
	if target < p.From {
		return nil, fmt.Errorf("the database is at version %04d, past target %04d: migrations only go up", p.From, target)
	}
	p.To = target
	hasTable, err := tableExists(ctx, r.db, r.dialect, "schema_migrations")
	if err != nil {
		return nil, err
	}
	if !hasTable {
		p.CreateTable = driverOf(r.dialect).versionTableDDL()
	}
	if p.From == 0 {
		if p.MoveClassicAway, err = moveAsideStatements(ctx, r.db, r.dialect); err != nil {
			return nil, err
		}
	}
	for _, m := range r.migrations[p.From:target] {
		pm := PreviewStep{Migration: m}
		if m.Step != nil {
			desc, err := m.Step.Describe(ctx, stepEnv{q: r.db, dialect: r.dialect, now: r.now})
			if err != nil {
				return nil, fmt.Errorf("preview %s: %w", m.ID(), err)
			}
			pm.GoStep = desc
		}
		p.Steps = append(p.Steps, pm)
	}
	return p, nil
}

// SQL renders the preview as the SQL Up would run, with comments for what is
// not SQL (the Go steps, the bookkeeping in schema_migrations).
func (p *Preview) SQL() string {
	var b strings.Builder
	if p.Empty() {
		fmt.Fprintf(&b, "-- %s database at version %04d: nothing to do\n", p.Dialect, p.From)
		return b.String()
	}
	fmt.Fprintf(&b, "-- %s database at version %04d; Up would apply %04d to %04d.\n", p.Dialect, p.From, p.From+1, p.To)
	fmt.Fprintf(&b, "-- Each migration is recorded in schema_migrations, marked dirty while it runs.\n")
	if p.CreateTable != "" {
		fmt.Fprintf(&b, "\n-- the version table\n%s;\n", p.CreateTable)
	}
	if len(p.MoveClassicAway) > 0 {
		fmt.Fprintf(&b, "\n-- a classic BBS schema: move its tables aside for the import\n")
		for _, s := range p.MoveClassicAway {
			fmt.Fprintf(&b, "%s;\n", s)
		}
	}
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "\n-- %s (checksum %s)\n", s.ID(), s.Checksum)
		if s.Step != nil {
			fmt.Fprintf(&b, "-- Go step %s: %s\n", s.Step.Name, s.GoStep)
		}
		for _, stmt := range s.Statements {
			fmt.Fprintf(&b, "%s;\n", stmt)
		}
	}
	return b.String()
}
