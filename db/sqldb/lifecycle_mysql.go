package sqldb

import (
	"context"
	"slices"

	"github.com/corkboard/corkboard/models"
)

// The lifecycle calls' fast path on MySQL (lifecycle_fast.go): the write
// (3) is one batch (writeBatch), sent in one round trip:
//
//	START TRANSACTION;
//	UPDATE actual_lrps USE INDEX (PRIMARY) SET … WHERE (<the key's columns> = …) AND <the tag read>;  -- or the DELETE
//	SET @corkboard_wrote = ROW_COUNT();
//	INSERT INTO crashes … SELECT … FROM DUAL WHERE @corkboard_wrote = 1;  -- a crash recorded
//	INSERT INTO event_outbox … SELECT … FROM DUAL WHERE @corkboard_wrote = 1;  -- each event, in order
//	INSERT INTO commit_receipts (token) SELECT … FROM DUAL WHERE @corkboard_wrote = 1;
//	COMMIT
//
// It runs alone: with coalescing on (write_lanes) the call takes the
// general path, whose writes are grouped.

// lifecycleBatch is w's batch and its arguments. Its write names the row
// by key as the driver's keyed writes do (updateByKeys, deleteByKeys: the
// primary key's index, named), then the tag read. Unnamed, MariaDB may
// reach the row through actual_lrps_definition, locking that index's
// entry before the row, while a write that locked the row first (the
// general path's locked read) then waits for that entry to update the
// columns it indexes — a deadlock, which the storage suite's race spec
// met (8 writers starting one instance).
func lifecycleBatch(d driver, w *lifecycleWrite) (string, []any) {
	keyed, tag := w.row[:len(w.row)-2], w.row[len(w.row)-2:]
	write, args := d.deleteByKeys(actualLRPKeys, keyed)
	if !w.removed {
		n := len(actualLRPMutableColumns)
		write, args = d.updateByKeys(actualLRPKeys, actualLRPAssignments, keyed[:n], keyed[n:])
	}
	b := newWriteBatch(write+actualLRPTagIs, append(slices.Clip(args), tag...)...)
	if w.recorded {
		b.insert("crashes", crashColumns, w.crash...)
	}
	for i := range w.events.types {
		b.insert("event_outbox", outboxColumns, w.events.row(i)...)
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
	batch, args := lifecycleBatch(s.driver, w)
	var wrote bool
	settled, err := s.commitStatement(w.token, func() (err error) {
		wrote, err = s.runBatch(ctx, batch, args)
		return err
	})
	return s.fastLifecycleOutcome(w, wrote || settled, err)
}
