package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// DatabaseTime reads the clock of the database conn (opened by Open for
// dialectName) once: the time every board sharing the database can agree
// on. Leases are judged by it in SQL (AcquireLease); a board keeps its
// other times on it through internal/dbclock, which reads it here.
// Postgres and MySQL give microseconds, SQLite milliseconds.
func DatabaseTime(ctx context.Context, conn *sql.DB, dialectName string) (time.Time, error) {
	d, err := newDriver(dialectName)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqldb: unknown dialect %q", dialectName)
	}
	var nanos int64
	if err := conn.QueryRowContext(ctx, "SELECT "+d.nowNanos()).Scan(&nanos); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return time.Unix(0, nanos), nil
}
