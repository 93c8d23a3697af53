package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

func TestSQLDB(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "SQLDB conformance suite")
}

// One migrated database per dialect serves the whole run; every spec starts
// from empty tables (see board.reset), so no spec sees another's rows.
var (
	databasesMu sync.Mutex
	databases   = map[string]*migratedDatabase{}
)

type migratedDatabase struct {
	database *testdb.Database
	conn     *sql.DB
}

func migratedDatabaseFor(dialect string) *migratedDatabase {
	databasesMu.Lock()
	defer databasesMu.Unlock()
	if m, ok := databases[dialect]; ok {
		return m
	}
	database, err := testdb.Create(dialect)
	Expect(err).NotTo(HaveOccurred())
	conn, err := sqldb.Open(context.Background(), dialect, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	Expect(migrations.Up(context.Background(), conn, dialect)).To(Succeed())
	m := &migratedDatabase{database: database, conn: conn}
	databases[dialect] = m
	return m
}

// CommitFaultsEnv, set to N, makes one in N write transactions of every
// store the suite makes fail at commit on their first run (a conflict, or
// the connection lost before or after the COMMIT: sqldb.WithCommitFaults),
// seeded with the suite's random seed. Every spec must pass alike: the
// retries and the commit receipts hide the faults from what a caller sees.
// make test runs the suite once without and once with it.
const CommitFaultsEnv = "CORKBOARD_COMMIT_FAULTS"

var (
	faultyStoresMu sync.Mutex
	faultyStores   []*sqldb.SQLDB
)

// newStore is sqldb.New, with the commit faults of CommitFaultsEnv.
func newStore(conn *sql.DB, dialectName string, opts ...sqldb.Option) *sqldb.SQLDB {
	oneIn, _ := strconv.Atoi(os.Getenv(CommitFaultsEnv))
	if oneIn <= 0 {
		return sqldb.New(conn, dialectName, opts...)
	}
	faultyStoresMu.Lock()
	defer faultyStoresMu.Unlock()
	seed := uint64(GinkgoRandomSeed()) + uint64(len(faultyStores))
	store := sqldb.New(conn, dialectName, append(opts, sqldb.WithCommitFaults(seed, oneIn))...)
	faultyStores = append(faultyStores, store)
	return store
}

var _ = ReportAfterSuite("commit faults injected", func(Report) {
	if os.Getenv(CommitFaultsEnv) == "" {
		return
	}
	var conflicts, before, after int
	faultyStoresMu.Lock()
	for _, s := range faultyStores {
		c, b, a := s.InjectedCommitFaults()
		conflicts, before, after = conflicts+c, before+b, after+a
	}
	faultyStoresMu.Unlock()
	fmt.Fprintf(GinkgoWriter, "commit faults injected: %d conflicts, %d connections lost before COMMIT, %d after\n", conflicts, before, after)
	fmt.Printf("commit faults injected: %d conflicts, %d connections lost before COMMIT, %d after\n", conflicts, before, after)
})

var _ = AfterSuite(func() {
	for _, m := range databases {
		Expect(m.conn.Close()).To(Succeed())
		Expect(m.database.Drop()).To(Succeed())
	}
})

// board is what a spec works with: a store over clean tables, its clock,
// and raw SQL access to arrange and inspect rows.
type board struct {
	dialect string
	conn    *sql.DB
	store   *sqldb.SQLDB
	clock   *fakeClock
	ctx     context.Context
}

// forEachDialect declares the specs in body once per dialect under test.
func forEachDialect(text string, body func(b *board)) bool {
	for _, dialect := range testdb.MustDialects() {
		Describe(fmt.Sprintf("[%s] %s", dialect, text), func() {
			b := &board{dialect: dialect}
			BeforeEach(func() { b.reset() })
			body(b)
		})
	}
	return true
}

var boardTables = []string{"actual_lrps", "run_infos", "desired_lrps", "domains", "cells", "leases", "rollouts", "operations", "event_log", "event_outbox", "commit_receipts", "freeze_windows", "crashes", "budget_groups"}

func (b *board) reset() {
	m := migratedDatabaseFor(b.dialect)
	b.conn = m.conn
	b.ctx = context.Background()
	for _, table := range boardTables {
		if table == "commit_receipts" && b.dialect == testdb.SQLite {
			continue // SQLite keeps no receipts (commit.go)
		}
		_, err := b.conn.Exec("DELETE FROM " + table)
		Expect(err).NotTo(HaveOccurred())
	}
	b.clock = &fakeClock{now: time.Unix(1_700_000_000, 0)}
	b.store = newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now))
}

func (b *board) exec(query string, args ...any) int64 {
	res, err := b.conn.Exec(dialect.Rebind(dialect.Name(b.dialect), query), args...)
	Expect(err).NotTo(HaveOccurred())
	n, err := res.RowsAffected()
	Expect(err).NotTo(HaveOccurred())
	return n
}

func (b *board) count(query string, args ...any) int {
	var n int
	Expect(b.conn.QueryRow(dialect.Rebind(dialect.Name(b.dialect), query), args...).Scan(&n)).To(Succeed())
	return n
}

// setState simulates a rep claiming or starting an instance.
func (b *board) setState(processGuid string, index int32, state models.ActualLRP_State, cellID string) {
	n := b.exec(`UPDATE actual_lrps SET state = ?, cell_id = ?, instance_guid = ?
 WHERE process_guid = ? AND instance_index = ? AND presence = 'ORDINARY'`,
		state.String(), cellID, fmt.Sprintf("ig-%s-%d", processGuid, index), processGuid, index)
	Expect(n).To(BeEquivalentTo(1), "no ORDINARY instance %s/%d to change", processGuid, index)
}

// putActual writes an instance row as a rep's report would leave it.
func (b *board) putActual(lrp *models.ActualLRP) {
	var netInfo []byte
	if lrp.NetInfo != nil {
		var err error
		netInfo, err = proto.Marshal(lrp.NetInfo)
		Expect(err).NotTo(HaveOccurred())
	}
	b.exec(`INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, instance_guid, cell_id,
 definition_id, state, net_info, crash_count, crash_reason, since, placement_error, routable, occupied,
 stop_requested, modification_tag_epoch, modification_tag_index) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		lrp.ProcessGuid, lrp.Index, lrp.Presence.String(), lrp.Domain, lrp.InstanceGuid, lrp.CellId,
		lrp.DefinitionId, lrp.State.String(), netInfo, lrp.CrashCount, lrp.CrashReason, lrp.Since,
		lrp.PlacementError, lrp.Routable, lrp.Occupied, lrp.StopRequested,
		lrp.GetModificationTag().GetEpoch(), int64(lrp.GetModificationTag().GetIndex()))
}

// instances lists an LRP's instances as the store reports them.
func (b *board) instances(processGuid string) []*models.ActualLRP {
	lrps, err := b.store.ActualLRPs(b.ctx, dbFilterGuid(processGuid))
	Expect(err).NotTo(HaveOccurred())
	return lrps
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// EqualProto compares protobuf messages by content.
func EqualProto(expected proto.Message) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(actual proto.Message) (bool, error) {
		return proto.Equal(actual, expected), nil
	}).WithTemplate("Expected\n{{.FormattedActual}}\n{{.To}} equal (as protobuf)\n{{format .Data 1}}", expected)
}

// HaveErrorType matches a *models.Error of the given type.
func HaveErrorType(t models.Error_Type) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(err error) (bool, error) {
		return models.IsErrorType(err, t), nil
	}).WithTemplate("Expected error\n{{.FormattedActual}}\n{{.To}} be a models.Error of type {{.Data}}", t)
}
