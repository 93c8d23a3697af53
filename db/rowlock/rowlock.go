// Package rowlock is every lock a board keeps longer than one
// transaction: a named row of a table (name, owner, expires_at, tenure)
// taken by a conditional upsert and judged by the database's clock. The
// convergence lease (table leases, db/sqldb) and the migration lock (table
// migration_lock, migrations) are such rows.
//
// A lock row is portable where the databases' own locks are not: MySQL's
// GET_LOCK is node-local on a Galera cluster (two boards on two nodes both
// get it) and Postgres's advisory locks are gone after a failover, while a
// row replicates with everything else and survives a promotion.
//
// A tenure is an unbroken stretch of one owner owning the lock; the
// tenure column numbers them (the fencing token). It moves on each time
// the lock is taken while it was free or expired, and stays while its
// owner renews in time. An owner writes under its tenure (Check, in the
// writing transaction): once the number moved, another owner may be
// writing, and the old owner's writes are refused even if it has not
// noticed yet — a board partitioned from its database that comes back,
// say.
//
// Worked example (ttl 10 s, the database's clock in seconds):
//
//  1. t=0: A acquires the free lock: row (A, expires 10, tenure 1).
//  2. t=3: A renews: (A, 13, 1). B asks: refused, nothing changes.
//  3. t=13: A was partitioned and could not renew; the row has expired.
//  4. t=14: B acquires: (B, 24, 2). B writes under tenure 2.
//  5. t=15: A's partition heals; its write under tenure 1 is refused
//     (ErrFenced) and changes nothing.
//  6. t=16: A asks again: refused while B's runs. Had A asked at t=14
//     before B (renewing its expired lock), A would own tenure 2, and its
//     writes of tenure 1 would be refused too: they belong to a tenure
//     that ended.
package rowlock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/corkboard/corkboard/db/dialect"
)

// ErrFenced is Check's refusal: that owner's tenure of the lock ended.
var ErrFenced = errors.New("the lock's tenure ended")

// Querier is what the lock's statements run on: a pool, a connection or a
// transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Acquire takes the lock named name in table for owner until the database's
// now + ttl when nobody holds it or its holder's time ran out, and renews it
// when owner owns it already. It returns the number of owner's tenure, or 0
// (changing nothing) while another owner's lock runs. Any number of owners
// racing for a free lock leave exactly one holder: it is one conditional
// upsert.
//
// Now is the database's clock, never the caller's: a board whose clock runs
// behind would write an expiry that the others read as long past, and one
// whose clock runs ahead would read every other lock as expired.
func Acquire(ctx context.Context, q Querier, d dialect.Name, table, name, owner string, ttl time.Duration) (int64, error) {
	if d == dialect.MySQL {
		return acquireMySQL(ctx, q, table, name, owner, ttl)
	}
	now := dialect.NowNanos(d)
	// The tenure stays when the row is its owner's and unexpired (a
	// renewal), and moves when the row is taken while free or expired.
	query := dialect.Rebind(d, `INSERT INTO `+table+` (name, owner, expires_at, tenure) VALUES (?, ?, `+now+` + ?, 1)
 ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at,
 tenure = CASE WHEN `+table+`.owner = excluded.owner AND `+table+`.expires_at > `+now+` THEN `+table+`.tenure ELSE `+table+`.tenure + 1 END
 WHERE `+table+`.owner = excluded.owner OR `+table+`.expires_at <= `+now+`
 RETURNING tenure`)
	var tenure int64
	err := q.QueryRowContext(ctx, query, name, owner, int64(ttl)).Scan(&tenure)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return tenure, err
}

// acquireMySQL is Acquire in MySQL's words, held to the general upsert by
// db/sqldb's lease oracle spec. Its assignments run in order, each seeing
// the ones before: the tenure is judged on the old owner and expiry, the
// owner changes only when the lock is free or owner's, and expires_at then
// follows the owner. Affected-row counts cannot tell a renewal that
// changed nothing from a refusal, so the row is read back.
func acquireMySQL(ctx context.Context, q Querier, table, name, owner string, ttl time.Duration) (int64, error) {
	now := dialect.NowNanos(dialect.MySQL)
	_, err := q.ExecContext(ctx, `INSERT INTO `+table+` (name, owner, expires_at, tenure) VALUES (?, ?, `+now+` + ?, 1)
 ON DUPLICATE KEY UPDATE
 tenure = IF(expires_at <= `+now+`, tenure + 1, tenure),
 owner = IF(owner = VALUES(owner) OR expires_at <= `+now+`, VALUES(owner), owner),
 expires_at = IF(owner = VALUES(owner), VALUES(expires_at), expires_at)`, name, owner, int64(ttl))
	if err != nil {
		return 0, err
	}
	var holder string
	var tenure int64
	if err := q.QueryRowContext(ctx, "SELECT owner, tenure FROM "+table+" WHERE name = ?", name).Scan(&holder, &tenure); err != nil {
		return 0, err
	}
	if holder != owner {
		return 0, nil
	}
	return tenure, nil
}

// Release gives the lock up if owner owns it, so that another can take it
// at once instead of after its expiry. The row stays, expired, so that the
// next tenure's number follows this one's.
func Release(ctx context.Context, q Querier, d dialect.Name, table, name, owner string) error {
	_, err := q.ExecContext(ctx, dialect.Rebind(d, "UPDATE "+table+" SET expires_at = 0 WHERE name = ? AND owner = ?"), name, owner)
	return err
}

// Check returns ErrFenced unless owner owns the lock in tenure and it has
// not expired. Run in a writing transaction, it makes the write the
// holder's: on Postgres and MySQL it also share-locks the row until the
// transaction ends, so that nobody takes the lock between the check and
// the commit (an Acquire by another waits); SQLite runs one writing
// transaction at a time anyway.
func Check(ctx context.Context, q Querier, d dialect.Name, table, name, owner string, tenure int64) error {
	query := "SELECT tenure FROM " + table + " WHERE name = ? AND owner = ? AND expires_at > " + dialect.NowNanos(d)
	switch d {
	case dialect.Postgres:
		query += " FOR SHARE"
	case dialect.MySQL:
		query += " LOCK IN SHARE MODE"
	}
	var current int64
	err := q.QueryRowContext(ctx, dialect.Rebind(d, query), name, owner).Scan(&current)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s %q: %w (owner %q, tenure %d: expired or taken)", table, name, ErrFenced, owner, tenure)
	case err != nil:
		return err
	case current != tenure:
		return fmt.Errorf("%s %q: %w (owner %q owns tenure %d, the write is of %d)", table, name, ErrFenced, owner, current, tenure)
	}
	return nil
}
