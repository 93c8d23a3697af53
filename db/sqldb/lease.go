package sqldb

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/rowlock"
)

var _ db.LeaseDB = (*SQLDB)(nil)

// AcquireLease takes the lease named name for owner until the database's
// now + ttl when nobody owns it or its owner's time ran out, and renews it
// when owner owns it already. It returns the number of owner's tenure, or 0,
// changing nothing, while another owner's lease runs. The rule, its tenures
// and its clock are db/rowlock's, on the leases table.
func (s *SQLDB) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (int64, error) {
	if err := checkLease(name, owner); err != nil {
		return 0, err
	}
	if ttl <= 0 {
		return 0, errInvalid("ttl", "must be positive")
	}
	var tenure int64
	err := s.autocommit(ctx, "acquire lease", func() error {
		var err error
		tenure, err = rowlock.Acquire(ctx, s.conn, s.driver.name(), leasesTable, name, owner, ttl)
		return err
	})
	return tenure, err
}

// ReleaseLease gives the lease up if owner owns it, so another board can
// take it at once instead of after the TTL.
func (s *SQLDB) ReleaseLease(ctx context.Context, name, owner string) error {
	if err := checkLease(name, owner); err != nil {
		return err
	}
	return s.autocommit(ctx, "release lease", func() error {
		return rowlock.Release(ctx, s.conn, s.driver.name(), leasesTable, name, owner)
	})
}

// leasesTable holds the leases' rows (migrations 0003 and 0017).
const leasesTable = "leases"

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
