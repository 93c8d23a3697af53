// Package testdb gives each test a fresh database of a chosen dialect and
// drops it afterwards, so no test depends on what an earlier run left.
//
// SQLite always runs. Postgres and MySQL run when their admin DSNs are set
// (CORKBOARD_POSTGRES_DSN, CORKBOARD_MYSQL_DSN); with CORKBOARD_REQUIRE_DBS=1
// a missing DSN is an error instead of a silently smaller run.
package testdb

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"
	_ "modernc.org/sqlite"
)

const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"

	PostgresDSNEnv = "CORKBOARD_POSTGRES_DSN"
	MySQLDSNEnv    = "CORKBOARD_MYSQL_DSN"
	RequireEnv     = "CORKBOARD_REQUIRE_DBS"
)

// Dialects lists the dialects this run tests. It fails when
// CORKBOARD_REQUIRE_DBS=1 and a server DSN is missing.
func Dialects() ([]string, error) {
	dialects := []string{SQLite}
	required := os.Getenv(RequireEnv) == "1"
	for _, d := range []struct{ name, env string }{{Postgres, PostgresDSNEnv}, {MySQL, MySQLDSNEnv}} {
		if os.Getenv(d.env) != "" {
			dialects = append(dialects, d.name)
		} else if required {
			return nil, fmt.Errorf("%s=1 but %s is not set", RequireEnv, d.env)
		}
	}
	return dialects, nil
}

// MustDialects is Dialects for suite set-up code, which has no error path.
func MustDialects() []string {
	d, err := Dialects()
	if err != nil {
		panic(err)
	}
	return d
}

// Database is one freshly created, empty database.
type Database struct {
	Dialect string
	// DSN connects to this database: a file path for SQLite, a driver DSN
	// otherwise. Pass it to sqldb.Open with Dialect as the driver.
	DSN  string
	drop func() error
}

// Drop deletes the database and everything in it.
func (d *Database) Drop() error { return d.drop() }

// Create makes a new empty database of the dialect, on the server named by
// the dialect's DSN environment variable.
func Create(dialect string) (*Database, error) {
	switch dialect {
	case Postgres:
		return CreateOn(dialect, os.Getenv(PostgresDSNEnv))
	case MySQL:
		return CreateOn(dialect, os.Getenv(MySQLDSNEnv))
	}
	return CreateOn(dialect, "")
}

// CreateOn makes a new empty database of the dialect on the server that
// adminDSN reaches (ignored for SQLite, which gets a temporary file).
func CreateOn(dialect, adminDSN string) (*Database, error) {
	name := "corkboard_test_" + randomSuffix()
	switch dialect {
	case SQLite:
		dir, err := os.MkdirTemp("", name)
		if err != nil {
			return nil, err
		}
		return &Database{Dialect: SQLite, DSN: filepath.Join(dir, "board.db"), drop: func() error { return os.RemoveAll(dir) }}, nil
	case Postgres:
		return createOnServer(dialect, "postgres", adminDSN, name, postgresDSNFor)
	case MySQL:
		return createOnServer(dialect, "mysql", adminDSN, name, mysqlDSNFor)
	}
	return nil, fmt.Errorf("unknown dialect %q", dialect)
}

func createOnServer(dialect, driver, adminDSN, name string, dsnFor func(string, string) (string, error)) (*Database, error) {
	if adminDSN == "" {
		return nil, fmt.Errorf("%s: no admin DSN set", dialect)
	}
	admin, err := sql.Open(driver, adminDSN)
	if err != nil {
		return nil, err
	}
	create := "CREATE DATABASE " + name
	if dialect == Postgres {
		// A locale that orders "a" before "B" and "é" before "z", as
		// production databases often have: code that leans on the server's
		// default collation for an order, or for two names being
		// different, fails here rather than only in production.
		create += " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
	}
	if _, err := admin.Exec(create); err != nil {
		admin.Close()
		return nil, fmt.Errorf("%s: create database %s: %w", dialect, name, err)
	}
	dsn, err := dsnFor(adminDSN, name)
	if err != nil {
		admin.Close()
		return nil, err
	}
	drop := func() error {
		defer admin.Close()
		stmt := "DROP DATABASE IF EXISTS " + name
		if dialect == Postgres {
			stmt += " WITH (FORCE)"
		}
		_, err := admin.Exec(stmt)
		return err
	}
	return &Database{Dialect: dialect, DSN: dsn, drop: drop}, nil
}

// postgresDSNFor points a URL- or keyword-style Postgres DSN at another database.
func postgresDSNFor(adminDSN, name string) (string, error) {
	if strings.HasPrefix(adminDSN, "postgres://") || strings.HasPrefix(adminDSN, "postgresql://") {
		u, err := url.Parse(adminDSN)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	var kept []string
	for _, kv := range strings.Fields(adminDSN) {
		if !strings.HasPrefix(kv, "dbname=") {
			kept = append(kept, kv)
		}
	}
	return strings.Join(append(kept, "dbname="+name), " "), nil
}

func mysqlDSNFor(adminDSN, name string) (string, error) {
	cfg, err := mysql.ParseDSN(adminDSN)
	if err != nil {
		return "", err
	}
	cfg.DBName = name
	return cfg.FormatDSN(), nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
