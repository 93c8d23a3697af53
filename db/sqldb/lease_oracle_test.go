package sqldb_test

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
)

// MySQL takes a lease with an upsert of its own (db/rowlock.acquireMySQL),
// whose IF assignments restate the general ON CONFLICT … WHERE upsert
// that SQLite and Postgres run. MySQL cannot run the general one (it has
// no ON CONFLICT), so the general path is held to it on the other
// databases: the same acquires, renewals, refusals, steals after expiry
// and releases must answer alike and leave the same owner and expiry.
//
// Leases run on the database's clock, so an expiry is written down as
// what it is relative to the call: the database's now plus the TTL asked,
// unchanged, or neither (with its distance from now). Each call asks a
// TTL no other call near it asks, so the first two cannot be confused;
// expiry is arranged by moving a lease's expires_at into the past.
var _ = Describe("the MySQL lease upsert against the general upsert", func() {
	dialects := testdb.MustDialects()
	if !slices.Contains(dialects, testdb.MySQL) {
		return
	}

	It("takes, renews, refuses and passes on a lease as the general upsert does on the other databases", func() {
		mysql := leaseTranscript(testdb.MySQL, false)
		compared := 0
		for _, other := range dialects {
			if other == testdb.MySQL {
				continue
			}
			By("against " + other)
			expectSameLines("mysql upsert", mysql, other+" general upsert", leaseTranscript(other, true))
			compared++
		}
		Expect(compared).To(BeNumerically(">", 0), "SQLite always runs")
	})
})

// leaseTranscript runs the lease calls on fresh tables of dialectName and
// writes down what each answered and left; upsert says whether that
// database's store must run the general upsert.
func leaseTranscript(dialectName string, upsert bool) []string {
	GinkgoHelper()
	b := &board{dialect: dialectName}
	b.reset()
	Expect(b.store.AcquireLeaseIsUpsert()).To(Equal(upsert))
	var lines []string

	stored := func(name string) (owner string, expires int64, found bool) {
		GinkgoHelper()
		err := b.conn.QueryRow("SELECT owner, expires_at FROM leases WHERE name = '"+name+"'").Scan(&owner, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return "", 0, false
		}
		Expect(err).NotTo(HaveOccurred())
		return owner, expires, true
	}
	acquire := func(label, name, owner string, ttl time.Duration) {
		GinkgoHelper()
		_, before, _ := stored(name)
		start := time.Now()
		acquired, err := b.store.AcquireLease(b.ctx, name, owner, ttl)
		end := time.Now()
		got, expires, found := stored(name)
		var expiry string
		switch {
		case !found:
			expiry = "no lease"
		// The database's clock is this machine's, to its precision
		// (SQLite: milliseconds).
		case expires >= start.Add(ttl-2*time.Millisecond).UnixNano() && expires <= end.Add(ttl).UnixNano():
			expiry = "now + " + ttl.String()
		case expires == before:
			expiry = "unchanged"
		default:
			expiry = fmt.Sprintf("now %+v", time.Duration(expires-end.UnixNano()).Round(time.Minute))
		}
		lines = append(lines, fmt.Sprintf("%s: acquired %v (%v); %s owned by %q until %s", label, acquired, err, name, got, expiry))
	}
	expire := func(name string) {
		GinkgoHelper()
		Expect(b.exec("UPDATE leases SET expires_at = ? WHERE name = ?", time.Now().Add(-time.Second).UnixNano(), name)).To(BeEquivalentTo(1))
	}
	release := func(label, name, owner string) {
		GinkgoHelper()
		err := b.store.ReleaseLease(b.ctx, name, owner)
		got, _, found := stored(name)
		lines = append(lines, fmt.Sprintf("%s: %v; %s owned %v by %q", label, err, name, found, got))
	}

	const lease = "convergence"
	acquire("a takes the free lease", lease, "board-a", time.Hour)
	acquire("b asks while a's runs", lease, "board-b", 2*time.Hour)
	acquire("a renews", lease, "board-a", 3*time.Hour)
	acquire("a renews for less", lease, "board-a", 30*time.Minute)
	expire(lease)
	acquire("a renews its expired lease", lease, "board-a", time.Hour)
	acquire("b asks again while a's runs", lease, "board-b", 2*time.Hour)
	expire(lease)
	acquire("b takes the expired lease", lease, "board-b", 2*time.Hour)
	acquire("a asks while b's runs", lease, "board-a", time.Hour)
	acquire("b renews", lease, "board-b", 3*time.Hour)
	release("a releases b's lease", lease, "board-a")
	acquire("a asks after its release of b's lease", lease, "board-a", time.Hour)
	release("b releases", lease, "board-b")
	acquire("a takes the released lease", lease, "board-a", 2*time.Hour)
	acquire("b takes another lease", "other", "board-b", time.Hour)
	acquire("a asks for the other lease", "other", "board-a", 3*time.Hour)
	acquire("b renews the other lease", "other", "board-b", 30*time.Minute)
	return lines
}
