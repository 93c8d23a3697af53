package sqldb_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
)

// The MySQL fast paths send a transaction as one batch; a statement that
// fails stops the batch with the transaction open on the connection,
// which goes back to the pool (batch_mysql.go).
var _ = Describe("the MySQL write batch", func() {
	if !slices.Contains(testdb.MustDialects(), testdb.MySQL) {
		return
	}
	b := &board{dialect: testdb.MySQL}
	BeforeEach(func() { b.reset() })

	It("leaves no transaction open on its connection when a statement of it fails: the next write on that connection commits on its own", func() {
		ctx := context.Background()
		// A pool of one connection: the write after the batch runs on the
		// batch's connection.
		pool, err := sqldb.Open(ctx, testdb.MySQL, migratedDatabaseFor(testdb.MySQL).database.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(pool.Close)
		pool.SetMaxOpenConns(1)
		store := sqldb.New(pool, testdb.MySQL)

		wrote, err := store.RunBatch(ctx, `START TRANSACTION;
INSERT INTO commit_receipts (token) VALUES (?);
SET @corkboard_wrote = ROW_COUNT();
INSERT INTO no_such_table (token) VALUES (?);
COMMIT`, []byte("batch"), []byte("batch"))
		Expect(err).To(MatchError(ContainSubstring("no_such_table")))
		Expect(wrote).To(BeFalse())

		_, err = pool.ExecContext(ctx, "INSERT INTO commit_receipts (token) VALUES (?)", []byte("after"))
		Expect(err).NotTo(HaveOccurred())
		// Seen from another connection: the write after committed, the
		// batch's insert did not.
		Expect(b.count("SELECT COUNT(*) FROM commit_receipts WHERE token = ?", []byte("after"))).To(Equal(1))
		Expect(b.count("SELECT COUNT(*) FROM commit_receipts WHERE token = ?", []byte("batch"))).To(BeZero())
	})
})
