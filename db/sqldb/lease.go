package sqldb

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/db"
)

var _ db.LeaseDB = (*SQLDB)(nil)

// AcquireLease takes the lease named name for owner until now + ttl when
// nobody owns it or its owner's time ran out, and renews it when owner
// owns it already; it returns false, changing nothing, while another
// owner's lease runs. It is one conditional upsert, so that any number of
// boards racing for a free lease leave exactly one owner.
//
// Now is the database's clock (driver.nowNanos), never the board's: a
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
	now := s.driver.nowNanos()
	var acquired bool
	err := s.autocommit(ctx, "acquire lease", func() error {
		if acquire := s.driver.acquireLease(); acquire != nil {
			var err error
			acquired, err = acquire(s, ctx, name, owner, ttl)
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

// ReleaseLease gives the lease up if owner owns it, so another board can
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
