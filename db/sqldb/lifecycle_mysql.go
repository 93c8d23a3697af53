package sqldb

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/corkboard/corkboard/models"
)

// The lifecycle calls' fast path on MySQL (lifecycle_fast.go): the write
// (3) is one batch of statements sent in one round trip (multiStatements,
// the arguments interpolated by the client: mysqlDSN), lifecycleBatch:
//
//	START TRANSACTION;
//	UPDATE actual_lrps SET … WHERE <key> AND <the tag read>;  -- or the DELETE
//	SET @corkboard_wrote = ROW_COUNT();
//	INSERT INTO crashes … SELECT … FROM DUAL WHERE @corkboard_wrote = 1;  -- a crash recorded
//	INSERT INTO event_outbox … SELECT … FROM DUAL WHERE @corkboard_wrote = 1;  -- each event, in order
//	INSERT INTO commit_receipts (token) SELECT … FROM DUAL WHERE @corkboard_wrote = 1;
//	COMMIT
//
// It runs on a connection held for it (sql.Conn.Raw), for two things
// database/sql does not give: the rows each statement affected (the
// write's are the answer), and the end of the transaction when a statement
// fails — the server stops at that statement with the transaction open,
// so the batch rolls it back on the same connection, or has the
// connection discarded when that fails too.
//
// The receipt goes to commit_receipts, not on the first event as the
// general path puts it (receiptOnEvents): a lost answer is settled by the
// token alone (commitStatement), without the event's id, which only the
// answer would carry.
//
// It runs alone: with coalescing on (write_lanes) the call takes the
// general path, whose writes are grouped.

// wroteVariable holds whether the batch's write stored the row.
const wroteVariable = "@corkboard_wrote"

// lifecycleBatch is w's batch and its arguments; the write is its second
// statement.
func lifecycleBatch(w *lifecycleWrite) (string, []any) {
	var b strings.Builder
	args := slices.Clone(w.row)
	b.WriteString("START TRANSACTION;\n")
	if w.removed {
		b.WriteString(deleteActualLRPSQL)
	} else {
		b.WriteString(updateActualLRP)
	}
	b.WriteString(";\nSET " + wroteVariable + " = ROW_COUNT()")
	onlyIfWrote := " FROM DUAL WHERE " + wroteVariable + " = 1"
	if w.recorded {
		b.WriteString(";\nINSERT INTO crashes (process_guid, definition_id, cell_id, crashed_at) SELECT ?, ?, ?, ?" + onlyIfWrote)
		args = append(args, w.crash...)
	}
	for i := range w.types {
		b.WriteString(";\nINSERT INTO event_outbox (event_type, event_key, payload) SELECT ?, ?, ?" + onlyIfWrote)
		args = append(args, w.types[i], w.keys[i], w.payloads[i])
	}
	b.WriteString(";\nINSERT INTO commit_receipts (token) SELECT ?" + onlyIfWrote + ";\nCOMMIT")
	args = append(args, w.token)
	return b.String(), args
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
		wrote, err = s.runLifecycleBatch(ctx, batch, args)
		return err
	})
	return s.fastLifecycleOutcome(w, wrote || settled, err)
}

// runLifecycleBatch runs batch (lifecycleBatch) on a connection held for
// it and says whether its write stored the row.
func (s *SQLDB) runLifecycleBatch(ctx context.Context, batch string, args []any) (wrote bool, err error) {
	conn, err := s.conn.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	rawErr := conn.Raw(func(dc any) error {
		exec, ok := dc.(sqldriver.ExecerContext)
		if !ok {
			err = fmt.Errorf("mysql: the connection cannot run a batch")
			return nil
		}
		named, convertErr := namedValues(dc, args)
		if convertErr != nil {
			err = convertErr
			return nil
		}
		res, execErr := exec.ExecContext(ctx, batch, named)
		if execErr != nil {
			err = execErr
			rollbackCtx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			defer cancel()
			if _, rollbackErr := exec.ExecContext(rollbackCtx, "ROLLBACK", nil); rollbackErr != nil {
				// The transaction may still be open on it: not for reuse.
				return sqldriver.ErrBadConn
			}
			return nil
		}
		affected := res.(mysql.Result).AllRowsAffected()
		wrote = len(affected) > 1 && affected[1] == 1
		return nil
	})
	if err == nil && rawErr != nil && !errors.Is(rawErr, sqldriver.ErrBadConn) {
		err = rawErr
	}
	return wrote, err
}

// namedValues are args as a driver connection takes them, converted as
// database/sql converts them for it.
func namedValues(dc any, args []any) ([]sqldriver.NamedValue, error) {
	checker, _ := dc.(sqldriver.NamedValueChecker)
	out := make([]sqldriver.NamedValue, len(args))
	for i, a := range args {
		nv := sqldriver.NamedValue{Ordinal: i + 1, Value: a}
		err := sqldriver.ErrSkip
		if checker != nil {
			err = checker.CheckNamedValue(&nv)
		}
		if errors.Is(err, sqldriver.ErrSkip) {
			nv.Value, err = sqldriver.DefaultParameterConverter.ConvertValue(a)
		}
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		out[i] = nv
	}
	return out, nil
}
