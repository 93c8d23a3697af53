package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// RotateOptions tunes RotateKeys.
type RotateOptions struct {
	// BatchSize is how many rows one transaction reads and rewrites
	// (default 200). Small batches hold row locks briefly, so a board
	// serving traffic meanwhile barely notices.
	BatchSize int
	// Progress, when set, is called after every committed batch with the
	// totals so far.
	Progress func(RotateProgress)

	// beforeWrite, when set, runs in a batch's transaction between its read
	// and its writes: the tests change rows there, as a concurrent writer
	// would, to show the compare-and-set skipping them.
	beforeWrite func(ctx context.Context, tx *sql.Tx, table string) error
}

// DefaultRotateBatchSize is RotateOptions.BatchSize when it is not set.
const DefaultRotateBatchSize = 200

// RotateProgress is where a RotateKeys pass stands: its counts per table
// and the table its last batch was in.
type RotateProgress struct {
	// Table is "run_infos" or "operations", the table of the last batch.
	Table      string
	RunInfos   RotateCounts
	Operations RotateCounts
}

// RotateCounts counts one table's rows in a RotateKeys pass.
type RotateCounts struct {
	// Seen is the rows read (those with a blob; NULL parameters are not
	// read).
	Seen int64
	// Reencrypted is the rows rewritten under the active key: they were
	// plain, or under another key.
	Reencrypted int64
	// Skipped is the rows that needed rewriting but changed between the
	// batch's read and its write (the compare-and-set on the old blob lost):
	// a later pass picks them up if they still need it.
	Skipped int64
}

// Total adds up both tables' counts.
func (p RotateProgress) Total() RotateCounts {
	return RotateCounts{
		Seen:        p.RunInfos.Seen + p.Operations.Seen,
		Reencrypted: p.RunInfos.Reencrypted + p.Operations.Reencrypted,
		Skipped:     p.RunInfos.Skipped + p.Operations.Skipped,
	}
}

func (c *RotateCounts) add(d RotateCounts) {
	c.Seen += d.Seen
	c.Reencrypted += d.Reencrypted
	c.Skipped += d.Skipped
}

// rotatedTable is one table RotateKeys walks: its primary key columns, in
// index order, the blob column it re-seals, and the blobRow of a key.
type rotatedTable struct {
	name   string
	key    []string
	column string
	row    func(key []string) blobRow
}

var rotatedTables = []rotatedTable{
	{name: "run_infos", key: []string{"process_guid", "definition_id"}, column: "definition",
		row: func(k []string) blobRow { return runInfoRow(k[0], k[1]) }},
	{name: "operations", key: []string{"id"}, column: "parameters",
		row: func(k []string) blobRow { return operationRow(k[0]) }},
}

// RotateKeys makes one pass over run_infos.definition and
// operations.parameters and re-seals under the active key every blob that
// is plain or sealed under another key, so that once it is done (see
// below) the other keys can be removed from the configuration. It needs a
// keyring (WithEncryption) that holds the active key and every key rows may
// be under; a row under a label it does not hold stops the pass with an
// InvalidRecord error naming the row and the label.
//
// A pass covers the rows each table had when the pass reached it. It is
// safe while boards serve traffic on the same database. Each batch of
// rows is its own short transaction: it reads the next BatchSize rows in
// primary key order after the last batch's last key (keyset pagination,
// so each batch is one index range and a pass interrupted anywhere can be
// started again from the top at little cost: what is done is only read
// again), and rewrites the rows that need it (in one statement on
// Postgres and MySQL), compare-and-set on the blob each had when read. A
// row changed or deleted in between is left alone and counted Skipped.
//
// The contract is "repeat until nothing is left": a pass does not see rows
// written behind its cursor by a board still sealing under an old key, and
// skips rows that changed under it. Run passes until one re-encrypts and
// skips nothing (bbs-migrate rotate-keys does), with every board
// configured with the new active key, before removing an old key.
//
// It returns the pass's counts, also when it fails part way (what was
// committed stays committed).
func (s *SQLDB) RotateKeys(ctx context.Context, opts RotateOptions) (RotateProgress, error) {
	var progress RotateProgress
	if s.keys == nil {
		return progress, errors.New("rotate keys: no encryption keys are configured (WithEncryption)")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultRotateBatchSize
	}
	for _, table := range rotatedTables {
		counts := &progress.RunInfos
		if table.name == "operations" {
			counts = &progress.Operations
		}
		// A pass covers the rows there were when it reached the table: rows
		// added since are written under some board's active key, and a
		// pass chasing them (operation ids grow with time) might not end
		// while traffic lasts.
		upTo, err := s.lastKey(ctx, table)
		if err != nil {
			return progress, err
		}
		if upTo == nil {
			continue
		}
		var after []string // the last key of the last batch; nil: start
		for {
			batch, last, err := s.rotateBatch(ctx, table, after, upTo, opts)
			if err != nil {
				return progress, err
			}
			if last == nil {
				break
			}
			counts.add(batch)
			progress.Table = table.name
			if opts.Progress != nil {
				opts.Progress(progress)
			}
			after = last
		}
	}
	return progress, nil
}

// lastKey is the highest primary key of table's rows with a blob, nil
// when there are none.
func (s *SQLDB) lastKey(ctx context.Context, table rotatedTable) ([]string, error) {
	desc := make([]string, len(table.key))
	for i, k := range table.key {
		desc[i] = k + " DESC"
	}
	key := make([]string, len(table.key))
	dest := make([]any, len(key))
	for i := range key {
		dest[i] = &key[i]
	}
	err := s.queryRow(ctx, s.conn, "SELECT "+strings.Join(table.key, ", ")+" FROM "+table.name+
		" WHERE "+table.column+" IS NOT NULL ORDER BY "+strings.Join(desc, ", ")+" LIMIT 1").Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, asModelError("rotate keys: "+table.name, err)
	}
	return key, nil
}

// rotateBatch re-seals the rows of one batch of table, those after the key
// after (nil: from the first) up to the key upTo, in one transaction. It
// returns the batch's counts and its last key, nil when there were no
// more rows.
func (s *SQLDB) rotateBatch(ctx context.Context, table rotatedTable, after, upTo []string, opts RotateOptions) (RotateCounts, []string, error) {
	query, args := rotationQuery(table, after, upTo, opts.BatchSize)
	active := s.keys.ActiveLabel()
	var counts RotateCounts
	var last []string
	err := s.transact(ctx, "rotate keys: "+table.name, func(tx *sql.Tx) error {
		// The transaction may run again: count this attempt alone.
		counts, last = RotateCounts{}, nil
		type pending struct {
			key       []string
			old, next []byte
		}
		var rewrites []pending
		err := s.eachRow(ctx, tx, query, args, func(rows *sql.Rows) error {
			key := make([]string, len(table.key))
			dest := make([]any, 0, len(key)+1)
			for i := range key {
				dest = append(dest, &key[i])
			}
			var blob []byte
			dest = append(dest, &blob)
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			counts.Seen++
			last = key
			label, sealed, err := EnvelopeLabel(blob)
			if err == nil && sealed && label == active {
				return nil
			}
			row := table.row(key)
			plain, err := s.keys.openBlob(row, blob)
			if err != nil {
				return errInvalidRecord("%v", err)
			}
			next, err := s.keys.seal(row, plain)
			if err != nil {
				return err
			}
			rewrites = append(rewrites, pending{key: key, old: blob, next: next})
			return nil
		})
		if err != nil {
			return err
		}
		if opts.beforeWrite != nil && len(rewrites) > 0 {
			if err := opts.beforeWrite(ctx, tx, table.name); err != nil {
				return err
			}
		}
		if len(rewrites) == 0 {
			return nil
		}
		if s.driver.inProcess() {
			// In-process round trips cost nothing, and one statement for
			// the batch would be slower, and deeper than SQLite's
			// expression limit (1000) for large batches.
			for _, r := range rewrites {
				update, updateArgs := rotationUpdate(s.driver, table, [][]string{r.key}, [][]byte{r.old}, [][]byte{r.next})
				n, err := s.execCount(ctx, tx, update, updateArgs)
				if err != nil {
					return err
				}
				counts.Reencrypted += n
				counts.Skipped += 1 - n
			}
			return nil
		}
		keys := make([][]string, len(rewrites))
		olds := make([][]byte, len(rewrites))
		nexts := make([][]byte, len(rewrites))
		for i, r := range rewrites {
			keys[i], olds[i], nexts[i] = r.key, r.old, r.next
		}
		update, updateArgs := rotationUpdate(s.driver, table, keys, olds, nexts)
		n, err := s.execCount(ctx, tx, update, updateArgs)
		if err != nil {
			return err
		}
		// Every row a condition matches gets a new blob (a new nonce), so
		// the count is of rewritten rows on every dialect, MySQL's
		// changed-rows count included.
		counts.Reencrypted = n
		counts.Skipped = int64(len(rewrites)) - n
		return nil
	})
	return counts, last, err
}

// rotationQuery reads the batch after the key after (nil: from the first)
// up to the key upTo: rows with a blob, in primary key order. For a
// two-column key (a, b) the conditions are a >= ? AND (a > ? OR b > ?)
// and a <= ? AND (a < ? OR b <= ?), which every dialect serves as one
// range of the primary key index (a plain OR alone can make a planner
// scan), compared in the database's own collation, as ORDER BY sorts.
func rotationQuery(table rotatedTable, after, upTo []string, batchSize int) (string, []any) {
	var b strings.Builder
	b.WriteString("SELECT " + strings.Join(table.key, ", ") + ", " + table.column + " FROM " + table.name)
	b.WriteString(" WHERE " + table.column + " IS NOT NULL")
	var args []any
	bound := func(key []string, outer, inner, last string) {
		switch len(table.key) {
		case 1:
			b.WriteString(" AND " + table.key[0] + " " + last + " ?")
			args = append(args, key[0])
		case 2:
			a, c := table.key[0], table.key[1]
			b.WriteString(" AND " + a + " " + outer + " ? AND (" + a + " " + inner + " ? OR " + c + " " + last + " ?)")
			args = append(args, key[0], key[0], key[1])
		default:
			panic("sqldb: rotation supports keys of one or two columns")
		}
	}
	if after != nil {
		bound(after, ">=", ">", ">")
	}
	bound(upTo, "<=", "<", "<=")
	b.WriteString(" ORDER BY " + strings.Join(table.key, ", "))
	fmt.Fprintf(&b, " LIMIT %d", batchSize)
	return b.String(), args
}

// execCount runs a statement and returns how many rows it changed.
func (s *SQLDB) execCount(ctx context.Context, tx *sql.Tx, query string, args []any) (int64, error) {
	res, err := s.exec(ctx, tx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// rotationUpdate rewrites the blobs of a batch's rows in one statement, so
// that a batch costs one round trip rather than one per row: each row gets
// its new blob, compare-and-set on the blob the batch read.
//
//	UPDATE t SET col = CASE WHEN k = ? THEN ? … END
//	WHERE (k = ? AND col = ?) OR …
//
// The new blobs are cast to the column's type, which Postgres cannot infer
// for a CASE of parameters.
func rotationUpdate(d driver, table rotatedTable, keys [][]string, olds, nexts [][]byte) (string, []any) {
	blobType := d.blobType()
	matchKey := make([]string, len(table.key))
	for i, k := range table.key {
		matchKey[i] = k + " = ?"
	}
	keyCondition := strings.Join(matchKey, " AND ")
	var b strings.Builder
	args := make([]any, 0, len(keys)*(2*len(table.key)+2))
	b.WriteString("UPDATE " + table.name + " SET " + table.column + " = CASE")
	for i, key := range keys {
		b.WriteString(" WHEN " + keyCondition + " THEN CAST(? AS " + blobType + ")")
		for _, part := range key {
			args = append(args, part)
		}
		args = append(args, nexts[i])
	}
	b.WriteString(" END WHERE ")
	for i, key := range keys {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(" + keyCondition + " AND " + table.column + " = ?)")
		for _, part := range key {
			args = append(args, part)
		}
		args = append(args, olds[i])
	}
	return b.String(), args
}
