package sqldb

import (
	"context"
	"database/sql"
	"time"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// Table crashes is the planner's memory of crashes (convergence.CrashMemory):
// a CRASHED row forgets its cell, so the crash path records the cell here in
// the crash's own transaction. The convergence lease owner reads the rows
// of its window every pass (Crashes) and prunes those older than
// convergence.MaxCrashWindow (PruneCrashes).

// crashRecorded is the row of crashes a lifecycle call that wrote after
// over before adds, as insertCrash's arguments: a crash notes that before,
// the row as it was when its instance crashed, crashed on its cell at the
// crash's time (after.Since, Unix nanoseconds). Any other call, and a row
// crashed without a cell (never the case for CLAIMED or RUNNING), adds none.
func crashRecorded(verb models.LifecycleVerb, before, after *models.ActualLRP) ([]any, bool) {
	if verb != models.LifecycleCrash || before.CellId == "" {
		return nil, false
	}
	return []any{before.ProcessGuid, before.DefinitionId, before.CellId, after.Since}, true
}

// crashColumns are crashRecorded's columns; insertCrash stores its row.
var (
	crashColumns = []string{"process_guid", "definition_id", "cell_id", "crashed_at"}
	insertCrash  = insertStatement("crashes", crashColumns)
)

// Crashes lists the crashes of the last window by the database's clock,
// every LRP's, for Snapshot.Crashes. Their order means nothing: the
// planner's decisions do not depend on it.
func (s *SQLDB) Crashes(ctx context.Context, window time.Duration) ([]convergence.CrashRow, error) {
	if window <= 0 {
		return nil, nil
	}
	since := s.now().Add(-window).UnixNano()
	var crashes []convergence.CrashRow
	err := s.eachRow(ctx, s.conn, "SELECT process_guid, definition_id, cell_id, crashed_at FROM crashes WHERE crashed_at > ?",
		[]any{since}, func(rows *sql.Rows) error {
			var c convergence.CrashRow
			if err := rows.Scan(&c.ProcessGuid, &c.DefinitionID, &c.CellID, &c.At); err != nil {
				return err
			}
			crashes = append(crashes, c)
			return nil
		})
	if err != nil {
		return nil, asModelError("list crashes", err)
	}
	return crashes, nil
}

// PruneCrashes deletes the crashes older than convergence.MaxCrashWindow by
// the database's clock, and says how many it deleted (a DELETE run again
// after a connection lost under it counts only what the second run found).
func (s *SQLDB) PruneCrashes(ctx context.Context) (int64, error) {
	var n int64
	err := s.autocommit(ctx, "prune crashes", func() error {
		res, err := s.exec(ctx, s.conn, "DELETE FROM crashes WHERE crashed_at < ?", s.now().Add(-convergence.MaxCrashWindow).UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
