package sqldb

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/db"
)

var _ db.LeaseDB = (*SQLDB)(nil)

// AcquireLease takes the lease named name for owner until now + ttl when
// nobody holds it or its holder's time ran out, and renews it when owner
// holds it already; it returns false, changing nothing, while another
// owner's lease runs. It is one conditional upsert, so that any number of
// boards racing for a free lease leave exactly one owner.
//
// Now is the database's clock (dialect.nowNanos), never the board's: a
// board whose clock runs behind would write an expiry that the others read
// as long past and take the lease while it still converges, and one whose
// clock runs ahead would read every other board's lease as expired. With
// one clock for every board, skew between boards does not matter.
func (s *SQLDB) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := checkLease(name, owner); err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, errInvalid("ttl", "must be positive")
	}
	now := s.dialect.nowNanos()
	var acquired bool
	err := s.autocommit(ctx, "acquire lease", func() error {
		if s.dialect == MySQL {
			var err error
			acquired, err = s.acquireLeaseMySQL(ctx, name, owner, ttl)
			return err
		}
		res, err := s.exec(ctx, s.conn, `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, `+now+` + ?)
 ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
 WHERE leases.owner = excluded.owner OR leases.expires_at <= `+now, name, owner, int64(ttl))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		acquired = n == 1
		return err
	})
	return acquired, err
}

// acquireLeaseMySQL is the upsert in MySQL's words. Its assignments run in
// order, each seeing the ones before: owner changes only when the lease is
// free or owner's, and expires_at then follows the owner. Affected-row
// counts cannot tell a renewal that changed nothing from a refusal, so the
// owner is read back.
func (s *SQLDB) acquireLeaseMySQL(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	now := s.dialect.nowNanos()
	_, err := s.exec(ctx, s.conn, `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, `+now+` + ?)
 ON DUPLICATE KEY UPDATE
 owner = IF(owner = VALUES(owner) OR expires_at <= `+now+`, VALUES(owner), owner),
 expires_at = IF(owner = VALUES(owner), VALUES(expires_at), expires_at)`, name, owner, int64(ttl))
	if err != nil {
		return false, err
	}
	var holder string
	if err := s.queryRow(ctx, s.conn, "SELECT owner FROM leases WHERE name = ?", name).Scan(&holder); err != nil {
		return false, err
	}
	return holder == owner, nil
}

// ReleaseLease gives the lease up if owner holds it, so another board can
// take it at once instead of after the TTL.
func (s *SQLDB) ReleaseLease(ctx context.Context, name, owner string) error {
	if err := checkLease(name, owner); err != nil {
		return err
	}
	return s.autocommit(ctx, "release lease", func() error {
		_, err := s.exec(ctx, s.conn, "DELETE FROM leases WHERE name = ? AND owner = ?", name, owner)
		return err
	})
}

func checkLease(name, owner string) error {
	switch {
	case name == "":
		return errInvalid("name", "required")
	case owner == "":
		return errInvalid("owner", "required")
	}
	if err := checkWidth("name", name, maxLeaseName); err != nil {
		return err
	}
	return checkWidth("owner", owner, maxLeaseOwner)
}

// Widths of the leases columns.
const (
	maxLeaseName  = 64
	maxLeaseOwner = 255
)
