package sqldb

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// The lifecycle calls' fast path on MySQL (lifecycle_fast.go): the write
// (3) is one batch (writeBatch), sent in one round trip:
//
//	START TRANSACTION;
//	UPDATE actual_lrps USE INDEX (PRIMARY) SET … WHERE <key> AND <the tag read>;  -- or the DELETE
//	SET @corkboard_wrote = ROW_COUNT();
//	INSERT INTO crashes … SELECT … FROM DUAL WHERE @corkboard_wrote = 1;  -- a crash recorded
//	INSERT INTO event_outbox … SELECT … FROM DUAL WHERE @corkboard_wrote = 1;  -- each event, in order
//	INSERT INTO commit_receipts (token) SELECT … FROM DUAL WHERE @corkboard_wrote = 1;
//	COMMIT
//
// It runs alone: with coalescing on (write_lanes) the call takes the
// general path, whose writes are grouped.

// The batch's write reaches the row by the primary key's index, named:
// MariaDB may otherwise reach it through actual_lrps_definition, locking
// that index's entry before the row, while a write that locked the row
// first (the general path's locked read, another batch) then waits for
// that entry to update the columns it indexes — a deadlock, which the
// storage suite's race spec met (8 writers starting one instance).
var (
	updateActualByPrimary = "UPDATE actual_lrps USE INDEX (PRIMARY)" + actualLRPAssignments + actualLRPByTag
	deleteActualByPrimary = "DELETE actual_lrps FROM actual_lrps USE INDEX (PRIMARY)" + actualLRPByTag
)

// lifecycleBatch is w's batch and its arguments.
func lifecycleBatch(w *lifecycleWrite) (string, []any) {
	write := updateActualByPrimary
	if w.removed {
		write = deleteActualByPrimary
	}
	b := newWriteBatch(write, w.row...)
	if w.recorded {
		b.insert("crashes", crashColumns, w.crash...)
	}
	for i := range w.types {
		b.insert("event_outbox", outboxColumns, w.types[i], w.keys[i], w.payloads[i])
	}
	return b.commit(w.token)
}

// lifecycleMySQL runs op's fast path (lifecycleFunc).
func (s *SQLDB) lifecycleMySQL(ctx context.Context, op lifecycleOp) (*models.ActualLRP, bool, error) {
	if s.coalescer != nil {
		return nil, false, nil
	}
	w, err := s.decideLifecycleWrite(ctx, op)
	if err != nil || w == nil {
		return nil, false, err
	}
	batch, args := lifecycleBatch(w)
	var wrote bool
	settled, err := s.commitStatement(w.token, func() (err error) {
		wrote, err = s.runBatch(ctx, batch, args)
		return err
	})
	return s.fastLifecycleOutcome(w, wrote || settled, err)
}
