package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/dbclock"
)

// boardClock is the clock every time the board writes or judges comes
// from — the store's, the planner's, the database watch's: the machine's
// on the database's time (see dbclock), so that boards whose machines'
// clocks disagree still agree on when a cell's presence runs out. Its
// runner must be ready (a first sync) before anything else runs. On
// SQLite the database's clock is this machine's.
func boardClock(logger lager.Logger, registry prometheus.Registerer, conn *sql.DB, driver string) (*dbclock.Clock, error) {
	machine, err := machineClock(logger)
	if err != nil {
		return nil, err
	}
	cfg := dbclock.Config{Machine: machine}
	if driver != driverSQLite {
		cfg.Read = func(ctx context.Context) (time.Time, error) { return sqldb.DatabaseTime(ctx, conn, driver) }
	}
	return dbclock.New(logger, registry, cfg), nil
}

// testClockOffsetEnv names a test seam, not a setting: when it holds a Go
// duration ("90s", "-2m"), the board's machine clock runs that far from
// the real one, as on a machine whose clock is off. The chaos specs use
// it to run two boards whose clocks disagree
// (chaos_clock_skew_e2e_test.go): a Go binary reads the clock without
// libc, so libfaketime cannot shift it. It is read here only, and left out
// of the config and its documentation on purpose.
const testClockOffsetEnv = "CORKBOARD_TEST_CLOCK_OFFSET"

// machineClock is the machine's clock, shifted by the test seam when it is
// set (and logged, so that no one mistakes a shifted board for a healthy
// one).
func machineClock(logger lager.Logger) (func() time.Time, error) {
	raw, ok := os.LookupEnv(testClockOffsetEnv)
	if !ok || raw == "" {
		return time.Now, nil
	}
	offset, err := time.ParseDuration(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", testClockOffsetEnv, err)
	}
	logger.Info("test-clock-offset", lager.Data{"offset": offset.String(), "warning": "a test seam: this board's machine clock is shifted on purpose"})
	return func() time.Time { return time.Now().Add(offset) }, nil
}
