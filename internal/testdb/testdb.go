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
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"
	_ "modernc.org/sqlite"

	"github.com/corkboard/corkboard/db/dialect"
)

// Dialect names, as sqldb.Open takes them (from package dialect).
const (
	SQLite   = string(dialect.SQLite)
	Postgres = string(dialect.Postgres)
	MySQL    = string(dialect.MySQL)
)

const (
	PostgresDSNEnv = "CORKBOARD_POSTGRES_DSN"
	MySQLDSNEnv    = "CORKBOARD_MYSQL_DSN"
	RequireEnv     = "CORKBOARD_REQUIRE_DBS"
)

// Dialects lists the dialects this run tests. It fails when
// CORKBOARD_REQUIRE_DBS=1 and a server DSN is missing.
func Dialects() ([]string, error) {
	var dialects []string
	required := os.Getenv(RequireEnv) == "1"
	for _, d := range dialect.All() {
		env := adminDSNEnv(string(d))
		if env == "" || os.Getenv(env) != "" {
			dialects = append(dialects, string(d))
		} else if required {
			return nil, fmt.Errorf("%s=1 but %s is not set", RequireEnv, env)
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

// server is how a dialect that runs on a database server differs from the
// others, here: SQLite has none and gets a temporary file instead.
type server struct {
	// adminDSNEnv names the environment variable holding the admin DSN.
	adminDSNEnv string
	// createOptions and dropOptions end CREATE DATABASE and DROP DATABASE.
	createOptions, dropOptions string
	// dsnFor points the admin DSN at another database.
	dsnFor func(adminDSN, name string) (string, error)
}

// servers holds every dialect but SQLite.
var servers = map[string]server{
	Postgres: {
		adminDSNEnv: PostgresDSNEnv,
		// A locale that orders "a" before "B" and "é" before "z", as
		// production databases often have: code that leans on the server's
		// default collation for an order, or for two names being
		// different, fails here rather than only in production.
		createOptions: " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'",
		dropOptions:   " WITH (FORCE)",
		dsnFor:        postgresDSNFor,
	},
	MySQL: {adminDSNEnv: MySQLDSNEnv, dsnFor: mysqlDSNFor},
}

// adminDSNEnv is the environment variable naming the admin DSN of the
// dialect's server, or "" for SQLite, which needs no server.
func adminDSNEnv(dialect string) string { return servers[dialect].adminDSNEnv }

// Create makes a new empty database of the dialect, on the server named by
// the dialect's DSN environment variable.
func Create(dialect string) (*Database, error) {
	adminDSN := ""
	if env := adminDSNEnv(dialect); env != "" {
		adminDSN = os.Getenv(env)
	}
	return CreateOn(dialect, adminDSN)
}

// CreateOn makes a new empty database of the dialect on the server that
// adminDSN reaches (ignored for SQLite, which gets a temporary file).
func CreateOn(dialectName, adminDSN string) (*Database, error) {
	if !dialect.Known(dialectName) {
		return nil, fmt.Errorf("unknown dialect %q", dialectName)
	}
	name := "corkboard_test_" + randomSuffix()
	srv, onServer := servers[dialectName]
	if !onServer {
		dir, err := os.MkdirTemp("", name)
		if err != nil {
			return nil, err
		}
		return &Database{Dialect: dialectName, DSN: filepath.Join(dir, "board.db"), drop: func() error { return removeSQLiteFolder(dir) }}, nil
	}
	return createOnServer(dialectName, srv, adminDSN, name)
}

// removeSQLiteFolder removes a SQLite database's temporary folder. A pool's
// Close does not wait for the connections still in use or being opened
// (the store, for one, prepares a statement seen for the first time on a
// connection of its own, in the background: db/sqldb/statements.go), and
// such a connection can create the -shm file after RemoveAll listed the
// folder, which then fails as not empty (the client suite met it: a
// folder left holding only board.db-shm). The pool closes the connection
// when it is given back, so the removal is tried again.
func removeSQLiteFolder(dir string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

func createOnServer(dialect string, srv server, adminDSN, name string) (*Database, error) {
	if adminDSN == "" {
		return nil, fmt.Errorf("%s: no admin DSN set", dialect)
	}
	// The dialect names are the database/sql driver names.
	admin, err := sql.Open(dialect, adminDSN)
	if err != nil {
		return nil, err
	}
	if _, err := admin.Exec("CREATE DATABASE " + name + srv.createOptions); err != nil {
		admin.Close()
		return nil, fmt.Errorf("%s: create database %s: %w", dialect, name, err)
	}
	dsn, err := srv.dsnFor(adminDSN, name)
	if err != nil {
		admin.Close()
		return nil, err
	}
	drop := func() error {
		defer admin.Close()
		_, err := admin.Exec("DROP DATABASE IF EXISTS " + name + srv.dropOptions)
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
