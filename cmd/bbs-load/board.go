package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"code.cloudfoundry.org/lager/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

// board is an in-process board on a fresh database, served over real HTTP
// on a loopback port.
type board struct {
	url      string
	server   *http.Server
	conn     *sql.DB
	database *testdb.Database
}

func startBoard(ctx context.Context, driver, adminDSN string) (*board, error) {
	if driver != testdb.SQLite && adminDSN == "" {
		return nil, fmt.Errorf("--dsn is required for driver %s", driver)
	}
	database, err := testdb.CreateOn(driver, adminDSN)
	if err != nil {
		return nil, err
	}
	conn, err := sqldb.Open(ctx, driver, database.DSN)
	if err != nil {
		database.Drop()
		return nil, err
	}
	if err := migrations.Up(ctx, conn, driver); err != nil {
		conn.Close()
		database.Drop()
		return nil, err
	}
	logger := lager.NewLogger("bbs-load")
	logger.RegisterSink(lager.NewWriterSink(io.Discard, lager.ERROR))
	// handlers.WithoutCellSide is TEMPORARY, until db/sqldb stores cells.
	handler := handlers.New(logger, handlers.WithoutCellSide(sqldb.New(conn, driver)), prometheus.NewRegistry())

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		conn.Close()
		database.Drop()
		return nil, err
	}
	server := &http.Server{Handler: handler}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("bbs-load: board stopped:", err)
		}
	}()
	return &board{url: "http://" + listener.Addr().String(), server: server, conn: conn, database: database}, nil
}

func (b *board) stop() {
	b.server.Close()
	b.conn.Close()
	if err := b.database.Drop(); err != nil {
		fmt.Println("bbs-load: drop database:", err)
	}
}
