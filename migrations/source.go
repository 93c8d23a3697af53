// Package migrations brings a board's database to the schema this binary
// expects: numbered SQL files per dialect, embedded in the binary, applied in
// order under a database-wide lock and recorded in schema_migrations.
package migrations

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
)

// Dialect names, the same strings sqldb.Open takes (package dialect has
// them; these are for callers that pass them as strings). This package
// imports that one as sqldialect: here dialect names a string everywhere.
const (
	SQLite   = string(sqldialect.SQLite)
	Postgres = string(sqldialect.Postgres)
	MySQL    = string(sqldialect.MySQL)
)

//go:embed sql
var embedded embed.FS

// Migration is one numbered step. Its identity is Version + Name + Checksum:
// the checksum covers the SQL file and, when the step has Go code, the name
// and revision of that code, so editing either is noticed by Validate.
type Migration struct {
	Version  int
	Name     string
	Checksum string
	// SQL is the file's text; Statements is it split into single statements.
	SQL        string
	Statements []string
	// Step, when set, runs before Statements (see goStep).
	Step *goStep
}

// ID is how a migration is named in messages: "0002_import_legacy".
func (m Migration) ID() string { return fmt.Sprintf("%04d_%s", m.Version, m.Name) }

var fileName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// load reads the migrations of one dialect from fsys (laid out as
// sql/<dialect>/NNNN_name.sql) and attaches the registered Go steps.
func load(fsys fs.FS, dialect string, steps map[int]*goStep) ([]Migration, error) {
	if _, err := sqldialect.Parse(dialect); err != nil {
		return nil, err
	}
	dir := path.Join("sql", dialect)
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations for %s: %w", dialect, err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		match := fileName.FindStringSubmatch(e.Name())
		if e.IsDir() || match == nil {
			return nil, fmt.Errorf("migration file %s/%s: name must look like 0001_create_tables.sql", dir, e.Name())
		}
		version, _ := strconv.Atoi(match[1])
		if version == 0 {
			return nil, fmt.Errorf("migration file %s/%s: versions start at 0001", dir, e.Name())
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("migration files %s and %s in %s share version %d", other, e.Name(), dir, version)
		}
		seen[version] = e.Name()
		text, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		stmts, err := splitStatements(string(text))
		if err != nil {
			return nil, fmt.Errorf("migration file %s/%s: %w", dir, e.Name(), err)
		}
		m := Migration{Version: version, Name: match[2], SQL: string(text), Statements: stmts, Step: steps[version]}
		m.Checksum = checksum(m)
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations for %s: version %04d is missing (found %s)", dialect, i+1, m.ID())
		}
	}
	for v, step := range steps {
		if v > len(out) {
			return nil, fmt.Errorf("migrations for %s: Go step %s registered for version %04d, which has no SQL file", dialect, step.Name, v)
		}
	}
	return out, nil
}

func checksum(m Migration) string {
	h := sha256.New()
	h.Write([]byte(m.SQL))
	if m.Step != nil {
		fmt.Fprintf(h, "\x00go-step:%s@%d", m.Step.Name, m.Step.Revision)
	}
	return hex.EncodeToString(h.Sum(nil))
}
