package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

// database is a fresh, migrated database of one dialect with the board's
// store on it, dropped by close.
type database struct {
	driver string
	conn   *sql.DB
	store  db.DB
	hub    *events.Hub
	// stopTailing ends the tailer feeding hub from the event log.
	stopTailing context.CancelFunc
	created     *testdb.Database
}

// openFreshDatabase creates a database (a temporary SQLite file, or a new
// database on the server behind adminDSN), migrates it and opens the store.
func openFreshDatabase(ctx context.Context, driver, adminDSN string) (*database, error) {
	if driver != string(dialect.SQLite) && adminDSN == "" {
		return nil, fmt.Errorf("-dsn is required for driver %s", driver)
	}
	created, err := testdb.CreateOn(driver, adminDSN)
	if err != nil {
		return nil, err
	}
	d := &database{driver: driver, created: created}
	if err := migrate(ctx, driver, created.DSN); err != nil {
		created.Drop()
		return nil, err
	}
	if err := d.open(ctx); err != nil {
		created.Drop()
		return nil, err
	}
	return d, nil
}

// createDatabase creates a database as openFreshDatabase does, but leaves
// it empty, with a plain connection and no store: a board started on it
// migrates it with its own migrations, as an older board must (its
// migrations refuse a database a newer binary migrated). openStoreIfCurrent
// then opens the store where the schema is this binary's.
func createDatabase(ctx context.Context, driver, adminDSN string) (*database, error) {
	if driver != string(dialect.SQLite) && adminDSN == "" {
		return nil, fmt.Errorf("-dsn is required for driver %s", driver)
	}
	created, err := testdb.CreateOn(driver, adminDSN)
	if err != nil {
		return nil, err
	}
	conn, err := sqldb.Open(ctx, driver, created.DSN)
	if err != nil {
		created.Drop()
		return nil, err
	}
	return &database{driver: driver, created: created, conn: conn}, nil
}

// openStoreIfCurrent opens this binary's store on a database that another
// binary migrated, when its schema is exactly this binary's; otherwise it
// leaves the plain connection and answers the versions (this binary's
// store would read columns an older schema does not have).
func (d *database) openStoreIfCurrent(ctx context.Context) (current bool, status *migrations.Status, err error) {
	r, err := migrations.NewRunner(d.conn, d.driver)
	if err != nil {
		return false, nil, err
	}
	status, err = r.Status(ctx)
	if err != nil {
		return false, nil, err
	}
	if status.Current != status.Latest || status.Dirty || len(status.Unknown) > 0 {
		return false, status, nil
	}
	d.conn.Close()
	d.conn = nil
	return true, status, d.open(ctx)
}

// migrate brings the new database to the latest schema, as a board does
// before it serves.
func migrate(ctx context.Context, driver, dsn string) error {
	conn, err := sqldb.Open(ctx, driver, dsn)
	if err != nil {
		return err
	}
	defer conn.Close()
	return migrations.Up(ctx, conn, driver)
}

// open connects a new pool and a new store with its own event hub, as a
// board starting on this database would.
func (d *database) open(ctx context.Context) error {
	conn, err := sqldb.Open(ctx, d.driver, d.created.DSN)
	if err != nil {
		return err
	}
	var tailer *events.Tailer
	store := sqldb.New(conn, d.driver, sqldb.WithEventsCommitted(func() { tailer.Wake() }))
	logger := lager.NewLogger("bbs-load")
	logger.RegisterSink(lager.NewWriterSink(io.Discard, lager.ERROR))
	tailing, stop := context.WithCancel(context.Background())
	hub, tailer, err := events.Follow(tailing, store, 100*time.Millisecond, logger)
	if err != nil {
		stop()
		conn.Close()
		return err
	}
	d.conn, d.store, d.hub, d.stopTailing = conn, store, hub, stop
	return nil
}

// reopen closes the pool and opens a new one: the database side of a
// board restart.
func (d *database) reopen(ctx context.Context) error {
	d.stopTailing()
	d.hub.Close()
	d.conn.Close()
	return d.open(ctx)
}

func (d *database) close() {
	if d.hub != nil {
		d.stopTailing()
		d.hub.Close()
	}
	if d.conn != nil {
		d.conn.Close()
	}
	if err := d.created.Drop(); err != nil {
		fmt.Println("bbs-load: drop database:", err)
	}
}

// board serves the API of a store over real HTTP on a loopback port,
// in-process.
type board struct {
	url    string
	server *http.Server
}

// openServedDatabase opens a fresh database of t and serves it from an
// in-process board; the caller closes the database and stops the board.
func openServedDatabase(ctx context.Context, t target) (*database, *board, error) {
	d, err := openFreshDatabase(ctx, t.driver, t.dsn)
	if err != nil {
		return nil, nil, err
	}
	b, err := startBoard(d.store, d.hub)
	if err != nil {
		d.close()
		return nil, nil, err
	}
	return d, b, nil
}

func startBoard(s db.DB, hub *events.Hub) (*board, error) {
	logger := lager.NewLogger("bbs-load")
	logger.RegisterSink(lager.NewWriterSink(io.Discard, lager.ERROR))
	handler := handlers.New(logger, s, prometheus.NewRegistry(), handlers.WithEvents(hub))

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	server := &http.Server{Handler: handler}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("bbs-load: board stopped:", err)
		}
	}()
	return &board{url: "http://" + listener.Addr().String(), server: server}, nil
}

func (b *board) stop() {
	b.server.Close()
}
