package sqldb

import (
	"context"
	cryptorand "crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/rowlock"
	"github.com/corkboard/corkboard/models"
)

// Every write transaction ends in commit, which makes a commit whose
// outcome is unknown safe to retry.
//
// A COMMIT that fails on a deadlock or a serialization failure (Postgres
// 40001/40P01, MySQL 1213 — how a Galera cluster reports a certification
// conflict — or SQLite's busy) did not apply: the transaction runs again.
// A COMMIT whose connection broke may or may not have applied. So on
// Postgres and MySQL every write transaction inserts a receipt, a unique
// token, with its events (in the same statement or round trip: it costs no
// round trip of its own), and a commit that lost its connection is settled
// by inserting the same token again, on another connection, in a statement
// of its own:
//
//  1. The insert fails on the token's key: the transaction committed. The
//     write succeeded; its caller is told so and it is not run again (a
//     desire would find its own LRP and answer ResourceExists; a claim
//     would log its events twice).
//  2. The insert succeeds: the transaction did not commit, and now never
//     will — had its COMMIT still been in flight, the insert would have
//     waited for it on the key's lock and then failed. The transaction
//     runs again (errCommitLost is retryable).
//  3. The insert fails otherwise (the database is still unreachable): the
//     outcome stays unknown and the caller gets Unavailable, as for any
//     write the database did not answer.
//  4. The insert succeeds, but the token was made receiptTrusted or more
//     ago: a committed transaction's receipt may have been pruned, so the
//     outcome stays unknown (Unavailable), as in 3.
//
// On MySQL a transaction that appends events keeps its receipt on its
// first outbox row instead (receiptOnEvents): a row of commit_receipts of
// its own cost the server a statement, a row of another table, the
// prune's delete and the purge of it: 4–8% of bbs-load peer's writes. The outbox row's
// id is the key settling inserts again (settleOnEvents), in a transaction
// that deletes it before it commits; the token says where the row went
// once the sequencer moved it into the log, which copies it:
//
//  1. The insert fails on the id: the transaction committed.
//  2. The insert succeeds, and the log holds the token past the position
//     the board saw before the COMMIT: the transaction committed and its
//     events were logged.
//  3. The insert succeeds and the log does not hold the token: the
//     transaction did not commit. Settling commits its insert and delete
//     of the id, and the transaction runs again only when that commit
//     succeeds: then it never will commit.
//  4. Anything fails otherwise: the outcome stays unknown (Unavailable).
//
// Why each holds. On one server: the lost transaction's uncommitted row
// keeps its id locked until it ends, so the insert waits for it (as in the
// table's case 2); a sequencer moving the row keeps the id locked until
// its commit, and the log read comes after that in settling's
// transaction. On Galera, where locks are a node's own and a write set may
// be applied on the settling node later than on the writer's: the id is in
// both transactions' write sets, and certification lets only the first of
// the two in the cluster's order commit. If the lost transaction came
// first, the settling node either had applied it (and its move, if made)
// before the insert — cases 1 and 2, read from rows that node holds — or
// settling's commit fails certification (case 4). If settling came first,
// the lost transaction fails certification: it never commits (case 3).
// An event row's id is never handed out twice, so the insert can fail on
// the lost transaction's row only.
//
// A claim or a start on the fast path (lifecycle_fast.go) keeps no
// receipt: a repeat of it writes nothing (models.LifecycleVerb.
// RepeatWritesNothing), so its lost answer is settled by deciding the call
// again on the general path (commitStatement). Those are most of a cell's
// calls, and each saves the database a row and its prune.
//
// Receipts are pruned after receiptRetention (PruneCommitReceipts, every
// few seconds by the converging board); those on events go with the
// outbox's and the log's rows. SQLite keeps none: it runs in the board's
// process, with no connection to lose.

// insertReceipt inserts a commit receipt. The token is its one column: it
// says when the receipt was made too (newReceiptToken).
const insertReceipt = "INSERT INTO commit_receipts (token) VALUES (?)"

// errCommitLost says a commit's connection broke and its receipt proved
// it did not apply: the transaction runs again.
var errCommitLost = errors.New("the connection broke during COMMIT and the transaction did not apply")

// errRepeatToSettle says the connection broke under a write without a
// receipt, whose repeat writes nothing: the call is decided again
// (commitStatement).
var errRepeatToSettle = errors.New("the connection broke under a write whose repeat writes nothing, and it is decided again")

// A receipt is kept receiptRetention after its token was made, by the
// clock of the board that prunes it, and its absence is trusted for
// receiptTrusted after that, by the clock of the board that made it and
// settles it (case 4 above): the 10 s between them is how far two boards'
// clocks may differ without a settle trusting the absence of a receipt
// that was pruned. receiptTrusted covers an API write's commit and settle
// under the default database timeout (10 s, then settleTimeout). The
// table holds about receiptRetention of writes.
//
// Worked example: board A makes a token at 12:00:00. Board B, whose clock
// is 9 s ahead, deletes the tokens made before its clock less 30 s: this
// one once B's clock passes 12:00:30, that is after A's 12:00:21. A
// settle of A's whose insert returned before A's 12:00:20 trusts what it
// found; one that returned later answers Unavailable unless the insert
// failed on the key (case 1 holds at any age).
const (
	receiptRetention = 30 * time.Second
	receiptTrusted   = 20 * time.Second
)

// settleTimeout bounds settling a lost commit, whatever the caller's
// context: a caller whose deadline ended the commit must still learn
// whether it applied before the next write of the same row.
const settleTimeout = 5 * time.Second

// commit ends a write transaction: it checks the lease tenure the write is
// made under, if any (checkFence), appends changes to the event log,
// inserts the receipt and commits (events.go, the package comment above).
// firstAttempt says whether the transaction is its write's first run; only
// those may be given an injected fault (WithCommitFaults).
func (s *SQLDB) commit(ctx context.Context, tx *sql.Tx, changes []models.Event, firstAttempt bool) error {
	if err := s.checkFence(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	var token []byte
	if s.driver.keepsReceipts() {
		token = s.newReceiptToken()
	}
	var receiptRow int64 // the outbox row carrying the receipt, if one does
	var err error
	switch {
	case len(changes) > 0:
		receiptRow, err = s.appendEvents(ctx, tx, changes, token)
	case token != nil:
		_, err = s.exec(ctx, tx, insertReceipt, token)
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	// Read before the COMMIT is sent: the events it commits are logged
	// past it.
	logSeen := s.logSeen.Load()
	if err = s.withFault(tx.Commit, firstAttempt)(); err != nil {
		// A fault that kept the COMMIT from running left tx open; after a
		// COMMIT, this is a no-op (sql.ErrTxDone).
		tx.Rollback()
	}
	switch {
	case err == nil || token == nil || !isUnreachable(err):
		return err
	case receiptRow != 0:
		return s.settleOnEvents(token, receiptRow, logSeen, err)
	}
	return s.settle(token, err)
}

// commitStatement runs a write of one statement (or one batch) that
// commits on its own and inserts the receipt token when it applied (the
// fast paths), with the commit-fault seam's fault if any. A connection
// lost under it is settled by the receipt: settled says the statement
// applied although run did not return its answer.
//
// A nil token is a claim's or a start's, which carries no receipt: its
// repeat writes nothing (models.LifecycleVerb.RepeatWritesNothing). A
// connection lost under it answers errRepeatToSettle, and the call is
// decided again by the general path, whose locked read waits for the
// lost write if the database still runs it: where that write applied, the
// call is a repeat and answers the row it wrote; where it did not, the
// call writes as it would have. A write the database runs only after that
// finds the row's tag moved on and stores nothing, its compare-and-set
// failing as any stale write's does.
func (s *SQLDB) commitStatement(token []byte, run func() error) (settled bool, err error) {
	if err = s.withFault(run, true)(); err != nil && isUnreachable(err) {
		if token == nil {
			return false, fmt.Errorf("%w: %v", errRepeatToSettle, err)
		}
		err = s.settle(token, err)
		return err == nil, err
	}
	return false, err
}

// settle learns whether the transaction whose receipt is token committed
// (cases 1–3 above).
func (s *SQLDB) settle(token []byte, commitErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	_, err := s.exec(ctx, s.conn, insertReceipt, token)
	switch {
	case isUniqueViolation(err):
		return nil // case 1
	case err != nil:
		return commitErr // case 3
	case s.now().Sub(receiptMadeAt(token)) >= receiptTrusted:
		return commitErr // case 4
	default:
		return fmt.Errorf("%w: %v", errCommitLost, commitErr) // case 2
	}
}

// settleOnEvents learns whether the transaction whose receipt token is on
// outbox row id committed (cases 1–4 above); logSeen is SQLDB.logSeen as
// it was before its COMMIT.
func (s *SQLDB) settleOnEvents(token []byte, id, logSeen int64, commitErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	committed, err := s.findReceiptOnEvents(ctx, token, id, logSeen)
	switch {
	case err != nil:
		return commitErr
	case committed:
		return nil
	default:
		return fmt.Errorf("%w: %v", errCommitLost, commitErr)
	}
}

// findReceiptOnEvents is settleOnEvents's transaction: whether the
// transaction committed, or an error when that stays unknown.
func (s *SQLDB) findReceiptOnEvents(ctx context.Context, token []byte, id, logSeen int64) (committed bool, err error) {
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	_, err = s.exec(ctx, tx, "INSERT INTO event_outbox (id, event_type, event_key, payload) VALUES (?, '', '', ?)", id, []byte{})
	if isUniqueViolation(err) {
		return true, nil // case 1
	}
	if err != nil {
		return false, err
	}
	var logged int
	err = s.queryRow(ctx, tx, "SELECT COUNT(*) FROM event_log WHERE position > ? AND receipt = ?", logSeen, token).Scan(&logged)
	if err != nil {
		return false, err
	}
	if logged > 0 {
		return true, nil // case 2; the rollback takes the id back
	}
	if _, err := s.exec(ctx, tx, "DELETE FROM event_outbox WHERE id = ?", id); err != nil {
		return false, err
	}
	return false, tx.Commit() // case 3, once committed
}

// newReceiptToken makes a commit receipt's token: 8 bytes of the store's
// time (nanoseconds since 1970, big-endian), then 8 random bytes. Both
// databases compare binary keys byte by byte, so a token made later by the
// store's clock sorts after one made earlier: a new receipt goes to the
// end of the table's primary key, where InnoDB, which stores rows in key
// order, appends it instead of splitting pages anywhere in its tree, and
// the prune deletes a range at the key's start (PruneCommitReceipts). The
// random half keeps tokens made in the same nanosecond, on any board,
// apart.
func (s *SQLDB) newReceiptToken() []byte {
	token := make([]byte, 16)
	binary.BigEndian.PutUint64(token, uint64(s.now().UnixNano()))
	if _, err := io.ReadFull(cryptorand.Reader, token[8:]); err != nil {
		panic("sqldb: no randomness for a commit receipt: " + err.Error())
	}
	return token
}

// receiptMadeAt is when token was made, by its maker's clock.
func receiptMadeAt(token []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(token)))
}

// receiptsMadeBefore is the 8-byte key that every token made before t
// sorts before and every token made at t or later sorts after: a proper
// prefix sorts before the keys it begins.
func receiptsMadeBefore(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

// PruneCommitReceipts deletes the receipts made more than receiptRetention
// ago by the store's clock and returns how many it deleted: a range at the
// start of the primary key, which needs no index of its own.
func (s *SQLDB) PruneCommitReceipts(ctx context.Context) (int64, error) {
	if !s.driver.keepsReceipts() {
		return 0, nil
	}
	var n int64
	err := s.autocommit(ctx, "prune commit receipts", func() error {
		res, err := s.exec(ctx, s.conn, "DELETE FROM commit_receipts WHERE token < ?", receiptsMadeBefore(s.now().Add(-receiptRetention)))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// checkFence refuses a write made under a lease tenure that has ended
// (db.WithFence). It runs last in the write's transaction, just before the
// events and the COMMIT, and share-locks the lease's row until the commit:
// nobody takes the lease between the check and the commit, and the lock
// is kept for two round trips. (Taken first, it would be kept for the whole
// transaction: a board cut off mid-transaction would then keep the next
// board from taking the lease until the database ended that transaction.)
func (s *SQLDB) checkFence(ctx context.Context, tx *sql.Tx) error {
	f, ok := db.FenceOf(ctx)
	if !ok {
		return nil
	}
	err := rowlock.Check(ctx, cachedQuerier{s: s, tx: tx}, s.driver.name(), leasesTable, f.Lease, f.Owner, f.Tenure)
	if errors.Is(err, rowlock.ErrFenced) {
		return models.NewError(models.Error_ResourceConflict, "refused a write of a lease tenure that ended: %v", err)
	}
	return err
}

// The commit-fault seam, as CockroachDB's inject_retry_errors_enabled:
// WithCommitFaults makes a share of write transactions fail at their
// commit, on their first run only, in one of the ways a real database
// fails them. Every write path commits through commit, so a suite run with
// it (CORKBOARD_COMMIT_FAULTS, see the storage suite) proves that each path
// survives them with its outcome unchanged.
type commitFault int

const (
	faultNone commitFault = iota
	// faultConflict rolls back and fails as the database reports a
	// deadlock or serialization failure (1213, 40001, 40P01, busy).
	faultConflict
	// faultLostBeforeCommit rolls back and fails as a connection broken
	// before the COMMIT reached the database.
	faultLostBeforeCommit
	// faultLostAfterCommit commits, then fails as a connection broken
	// before the COMMIT's answer arrived.
	faultLostAfterCommit
	// faultLostAfterLogged is faultLostAfterCommit with the committed
	// events moved into the log before it fails, as a sequencer may move
	// them before settling looks for them; only a spec asks for it.
	faultLostAfterLogged
)

// errInjectedConnLoss is an injected broken connection; isUnreachable
// takes it as a real one (an unexpected EOF on the socket).
var errInjectedConnLoss = fmt.Errorf("injected commit fault: %w", io.ErrUnexpectedEOF)

type commitFaults struct {
	mu    sync.Mutex
	rng   *rand.Rand
	oneIn int
	only  commitFault // when set, every fault is of this kind
	// conflictsOnly: the database runs in the board's process (SQLite),
	// where no connection can break.
	conflictsOnly bool
	counts        [5]int
}

// WithCommitFaults makes one in oneIn write transactions (chosen by a
// generator seeded with seed) fail at commit on their first run, with a
// conflict, a connection lost before the commit or one lost after it (on
// SQLite, which has no connection to lose, a conflict). A test seam: a
// board never sets it.
func WithCommitFaults(seed uint64, oneIn int) Option {
	return func(s *SQLDB) {
		if oneIn > 0 {
			s.faults = &commitFaults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), oneIn: oneIn,
				conflictsOnly: !s.driver.keepsReceipts()}
		}
	}
}

// InjectedCommitFaults returns how many faults of each kind were injected:
// conflicts, connections lost before and after the commit.
func (s *SQLDB) InjectedCommitFaults() (conflicts, lostBefore, lostAfter int) {
	if s.faults == nil {
		return 0, 0, 0
	}
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	return s.faults.counts[faultConflict], s.faults.counts[faultLostBeforeCommit],
		s.faults.counts[faultLostAfterCommit] + s.faults.counts[faultLostAfterLogged]
}

func (f *commitFaults) next() commitFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.IntN(f.oneIn) != 0 {
		return faultNone
	}
	kind := commitFault(1 + f.rng.IntN(3))
	switch {
	case f.only != faultNone:
		kind = f.only
	case f.conflictsOnly:
		kind = faultConflict
	}
	f.counts[kind]++
	return kind
}

// withFault is commit, a COMMIT or a write of statements that commit on
// their own, with the commit-fault seam's fault, if any, on its first run
// (WithCommitFaults): a conflict or a connection lost before the commit
// stops it from running; one lost after lets it run, then fails.
func (s *SQLDB) withFault(commit func() error, firstAttempt bool) func() error {
	if !firstAttempt || s.faults == nil {
		return commit
	}
	switch s.faults.next() {
	case faultConflict:
		return s.driver.injectedConflict
	case faultLostBeforeCommit:
		return func() error { return errInjectedConnLoss }
	case faultLostAfterCommit:
		return func() error {
			if err := commit(); err != nil {
				return err
			}
			return errInjectedConnLoss
		}
	case faultLostAfterLogged:
		return func() error {
			if err := commit(); err != nil {
				return err
			}
			if err := s.logCommitted(context.Background()); err != nil {
				return err
			}
			return errInjectedConnLoss
		}
	}
	return commit
}
