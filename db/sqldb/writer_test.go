package sqldb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
)

var _ = Describe("A SQLite pool's writer", func() {
	It("runs every write transaction of the pool's stores on one connection, readers on the others, and gives it back when the pool closes", func() {
		ctx := context.Background()
		pool, err := sqldb.Open(ctx, sqldb.SQLite, filepath.Join(GinkgoT().TempDir(), "board.db"))
		Expect(err).NotTo(HaveOccurred())
		Expect(sqldb.HasWriter(pool)).To(BeTrue())
		first, second := sqldb.New(pool, sqldb.SQLite), sqldb.New(pool, sqldb.SQLite)

		// A temporary table lives on the connection that made it: every
		// later write transaction, of either store, finds it there.
		Expect(first.InWriteTransaction(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec("CREATE TEMP TABLE written_here (n INTEGER)")
			return err
		})).To(Succeed())
		for i := range 20 {
			// Readers take connections and give them back in turn, so that
			// the pool's most recently freed connection is a reader's.
			reader, err := pool.Conn(ctx)
			Expect(err).NotTo(HaveOccurred())
			var one int
			Expect(reader.QueryRowContext(ctx, "SELECT 1").Scan(&one)).To(Succeed())
			var missing int
			Expect(reader.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_temp_master WHERE name = 'written_here'").Scan(&missing)).To(Succeed())
			Expect(missing).To(Equal(0), "a reader's connection is not the writer's")
			Expect(reader.Close()).To(Succeed())

			store := []*sqldb.SQLDB{first, second}[i%2]
			Expect(store.InWriteTransaction(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec("INSERT INTO written_here (n) VALUES (?)", i)
				return err
			})).To(Succeed(), "write %d", i)
		}

		Expect(pool.Close()).To(Succeed())
		Expect(sqldb.HasWriter(pool)).To(BeFalse())
		Expect(pool.Stats().OpenConnections).To(Equal(0), "the writer's connection was closed with the pool")
	})

	It("leaves a pool of one connection to its reads and writes alike", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool, err := sqldb.Open(ctx, sqldb.SQLite, filepath.Join(GinkgoT().TempDir(), "board.db"))
		Expect(err).NotTo(HaveOccurred())
		defer pool.Close()
		store := sqldb.New(pool, sqldb.SQLite)
		write := func() error {
			return store.InWriteTransaction(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
				return err
			})
		}
		pool.SetMaxOpenConns(1)
		for range 3 {
			Expect(write()).To(Succeed())
			var n int
			Expect(pool.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n)).To(Succeed(), "a read finds the one connection free")
		}
	})
})
