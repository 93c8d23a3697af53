package handlers_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

func TestHandlers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Handlers Suite")
}

// One migrated database per dialect serves the whole suite; every spec
// works under its own random process guids and domains, so specs do not see
// each other's rows and the suite stays fast on the server databases.
var stores = map[string]*sqldb.SQLDB{}

// authStore serves the authorization specs, whose certificates name fixed
// cells (cell-1, cell-2): a SQLite database of their own keeps those cells'
// registrations and drains out of every other spec's way.
var authStore *sqldb.SQLDB

var _ = BeforeSuite(func() {
	for _, dialect := range testdb.MustDialects() {
		database, err := testdb.Create(dialect)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)

		conn, err := sqldb.Open(context.Background(), dialect, database.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)

		Expect(migrations.Up(context.Background(), conn, dialect)).To(Succeed())
		stores[dialect] = sqldb.New(conn, dialect)
	}

	database, err := testdb.Create(testdb.SQLite)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	conn, err := sqldb.Open(context.Background(), testdb.SQLite, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	Expect(migrations.Up(context.Background(), conn, testdb.SQLite)).To(Succeed())
	authStore = sqldb.New(conn, testdb.SQLite)
})
