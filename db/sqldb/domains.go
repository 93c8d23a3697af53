package sqldb

import (
	"context"
	"database/sql"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

// UpsertDomain marks domain fresh until now+ttl; a ttl of 0 keeps it fresh
// forever, stored as expires_at = 0.
func (s *SQLDB) UpsertDomain(ctx context.Context, domain string, ttl time.Duration) error {
	if domain == "" {
		return errInvalid("domain", "is required")
	}
	if err := checkName("domain", domain, maxDomain); err != nil {
		return err
	}
	expiresAt := expiry(s.now().UnixNano(), ttl)
	upsert := s.driver.upsert("domains", []string{"domain", "expires_at"}, []string{"domain"}, []string{"expires_at"})
	return s.transact(ctx, "upsert domain", func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, upsert, domain, expiresAt)
		return err
	})
}

// FreshDomains lists the domains that have not expired, by name.
func (s *SQLDB) FreshDomains(ctx context.Context) ([]*models.Domain, error) {
	var domains []*models.Domain
	err := s.eachRow(ctx, s.conn, "SELECT domain, expires_at FROM domains WHERE expires_at = 0 OR expires_at > ?",
		[]any{s.now().UnixNano()}, func(rows *sql.Rows) error {
			d := &models.Domain{}
			domains = append(domains, d)
			return rows.Scan(&d.Domain, &d.ExpiresAt)
		})
	if err != nil {
		return nil, asModelError("list fresh domains", err)
	}
	// Sorted here, not in SQL, so every dialect's collation gives one order.
	slices.SortFunc(domains, func(a, b *models.Domain) int { return strings.Compare(a.Domain, b.Domain) })
	return domains, nil
}

// expiry is the expires_at value for a ttl starting at now.
func expiry(now int64, ttl time.Duration) int64 {
	switch {
	case ttl == 0:
		return 0
	case ttl < 0:
		// Already expired: fresh means expires_at > now.
		return now
	case int64(ttl) > math.MaxInt64-now:
		// Beyond the year 2262, which int64 nanoseconds cannot hold.
		return 0
	}
	return now + int64(ttl)
}
