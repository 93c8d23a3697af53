package sqldb

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// writeBatch builds a MySQL fast path's batch (lifecycle_mysql.go): one
// transaction sent as one round trip, whose write — one UPDATE or DELETE,
// compare-and-set — is its second statement, and whose every other
// statement inserts only where that write stored a row:
//
//	START TRANSACTION;
//	<write>;
//	SET @corkboard_wrote = ROW_COUNT();
//	INSERT INTO <table> (<columns>) SELECT ?, … FROM DUAL WHERE @corkboard_wrote = 1;  -- each insert, in order
//	INSERT INTO commit_receipts (token) SELECT ? FROM DUAL WHERE @corkboard_wrote = 1;  -- but for a claim or a start
//	COMMIT
//
// The statements are sent with multiStatements, their arguments
// interpolated by the client (mysqlDSN). The receipt goes to
// commit_receipts, not on the first event as the general path puts it
// (receiptOnEvents): a lost answer is settled by the token alone
// (commitStatement), without the event's id, which only the answer would
// carry. A claim or a start has none: its repeat writes nothing, so a lost
// answer is settled by deciding it again (commitStatement).
//
// A batch runs on a connection held for it (runBatch, sql.Conn.Raw), for
// two things database/sql does not give: the rows each statement affected
// (the write's are the answer), and the end of the transaction when a
// statement fails — the server stops at that statement with the
// transaction open, so the batch rolls it back on the same connection, or
// has the connection discarded when that fails too.
type writeBatch struct {
	b    strings.Builder
	args []any
}

// wroteVariable holds whether the batch's write stored a row.
const wroteVariable = "@corkboard_wrote"

const onlyIfWrote = " FROM DUAL WHERE " + wroteVariable + " = 1"

func newWriteBatch(write string, args ...any) *writeBatch {
	w := &writeBatch{args: slices.Clone(args)}
	w.b.WriteString("START TRANSACTION;\n" + write + ";\nSET " + wroteVariable + " = ROW_COUNT()")
	return w
}

// insert adds a row of table, inserted only where the write stored one.
func (w *writeBatch) insert(table string, columns []string, values ...any) {
	w.b.WriteString(";\nINSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") SELECT " +
		strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ") + onlyIfWrote)
	w.args = append(w.args, values...)
}

// commit ends the batch with the receipt, if token is not nil, and the
// COMMIT, and returns it with its arguments.
func (w *writeBatch) commit(token []byte) (string, []any) {
	if token != nil {
		w.insert("commit_receipts", []string{"token"}, token)
	}
	w.b.WriteString(";\nCOMMIT")
	return w.b.String(), w.args
}

// runBatch runs batch (writeBatch) on a connection held for it and says
// whether its write stored a row.
func (s *SQLDB) runBatch(ctx context.Context, batch string, args []any) (wrote bool, err error) {
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
	if err == nil {
		// Raw's own failure; its ErrBadConn comes only with err set.
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
