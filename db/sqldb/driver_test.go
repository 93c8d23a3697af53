package sqldb_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("the driver", func() {
	DescribeTable("Upsert",
		func(dialect, want string) {
			Expect(sqldb.Upsert(dialect, "domains", []string{"domain", "expires_at"}, []string{"domain"}, []string{"expires_at"})).
				To(Equal(want))
		},
		Entry("SQLite", sqldb.SQLite,
			"INSERT INTO domains (domain, expires_at) VALUES (?, ?) ON CONFLICT (domain) DO UPDATE SET expires_at = excluded.expires_at"),
		Entry("Postgres", sqldb.Postgres,
			"INSERT INTO domains (domain, expires_at) VALUES (?, ?) ON CONFLICT (domain) DO UPDATE SET expires_at = excluded.expires_at"),
		Entry("MySQL", sqldb.MySQL,
			"INSERT INTO domains (domain, expires_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)"),
	)

	DescribeTable("InsertMissing",
		func(dialect, want string) {
			Expect(sqldb.InsertMissing(dialect, "t", []string{"k", "v"}, []string{"k"}, 2)).To(Equal(want))
		},
		Entry("SQLite", sqldb.SQLite, "INSERT INTO t (k, v) VALUES (?, ?), (?, ?) ON CONFLICT (k) DO NOTHING"),
		Entry("Postgres", sqldb.Postgres, "INSERT INTO t (k, v) VALUES (?, ?), (?, ?) ON CONFLICT (k) DO NOTHING"),
		Entry("MySQL", sqldb.MySQL, "INSERT INTO t (k, v) VALUES (?, ?), (?, ?) ON DUPLICATE KEY UPDATE k = k"),
	)

	DescribeTable("reads rows by key",
		func(dialect string, lock bool, want string) {
			Expect(sqldb.SelectActualByKeys(dialect, 2, lock)).To(Equal(want))
		},
		Entry("SQLite joins the keys of one JSON argument, whatever their number, and never locks", sqldb.SQLite, true,
			"WITH v (k1, k2, k3) AS (SELECT value->>0, value->>1, value->>2 FROM json_each(?)) SELECT state FROM v JOIN actual_lrps ON "+
				"actual_lrps.process_guid = v.k1 AND actual_lrps.instance_index = v.k2 AND actual_lrps.presence = v.k3"),
		Entry("Postgres types the first row and locks the table's rows", sqldb.Postgres, true,
			"WITH v (k1, k2, k3) AS (VALUES (?::text, ?::integer, ?::text), (?, ?, ?)) SELECT state FROM v JOIN actual_lrps ON "+
				"actual_lrps.process_guid = v.k1 AND actual_lrps.instance_index = v.k2 AND actual_lrps.presence = v.k3 FOR UPDATE OF actual_lrps"),
		Entry("Postgres without a lock", sqldb.Postgres, false,
			"WITH v (k1, k2, k3) AS (VALUES (?::text, ?::integer, ?::text), (?, ?, ?)) SELECT state FROM v JOIN actual_lrps ON "+
				"actual_lrps.process_guid = v.k1 AND actual_lrps.instance_index = v.k2 AND actual_lrps.presence = v.k3"),
		Entry("MySQL names the keys in a tuple list on the primary key", sqldb.MySQL, true,
			"SELECT state FROM actual_lrps USE INDEX (PRIMARY) WHERE (process_guid, instance_index, presence) IN ((?, ?, ?), (?, ?, ?)) FOR UPDATE"),
	)

	DescribeTable("deletes rows by key",
		func(dialect, want string) {
			Expect(sqldb.DeleteActualByKeys(dialect, 1)).To(Equal(want))
		},
		Entry("SQLite by rowid", sqldb.SQLite,
			"WITH v (k1, k2, k3) AS (SELECT value->>0, value->>1, value->>2 FROM json_each(?)) DELETE FROM actual_lrps WHERE rowid IN (SELECT actual_lrps.rowid FROM v JOIN actual_lrps ON "+
				"actual_lrps.process_guid = v.k1 AND actual_lrps.instance_index = v.k2 AND actual_lrps.presence = v.k3)"),
		Entry("Postgres with USING", sqldb.Postgres,
			"WITH v (k1, k2, k3) AS (VALUES (?::text, ?::integer, ?::text)) DELETE FROM actual_lrps USING v WHERE "+
				"actual_lrps.process_guid = v.k1 AND actual_lrps.instance_index = v.k2 AND actual_lrps.presence = v.k3"),
		Entry("MySQL with the key's equalities (one key; a tuple list for more)", sqldb.MySQL,
			"DELETE actual_lrps FROM actual_lrps USE INDEX (PRIMARY) WHERE (process_guid = ? AND instance_index = ? AND presence = ?)"),
	)

	It("gives SQLite the keys as one JSON argument: an array of each key's columns", func() {
		keys := []models.ActualLRPKey{
			{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY},
			{ProcessGuid: `quote"d`, Index: 12, Presence: models.ActualLRP_EVACUATING},
		}
		Expect(sqldb.ActualKeysArgs(sqldb.SQLite, keys)).To(Equal([]any{`[["web",0,"ORDINARY"],["quote\"d",12,"EVACUATING"]]`}))
		Expect(sqldb.ActualKeysArgs(sqldb.Postgres, keys)).To(Equal([]any{"web", int32(0), "ORDINARY", `quote"d`, int32(12), "EVACUATING"}))
	})

	It("refuses an unknown dialect", func() {
		Expect(func() { sqldb.New(nil, "oracle") }).To(PanicWith(ContainSubstring(`"oracle"`)))
	})
})

var _ = Describe("Open's DSN defaults", func() {
	DescribeTable("Postgres gets one round trip per statement, and ends a cut-off board's transactions",
		func(dsn, want string) { Expect(sqldb.PostgresDSN(dsn)).To(Equal(want)) },
		Entry("URL with parameters", "postgres://u@h/db?sslmode=disable",
			"postgres://u@h/db?sslmode=disable&binary_parameters=yes&idle_in_transaction_session_timeout=10000"),
		Entry("URL without parameters", "postgresql://u@h/db",
			"postgresql://u@h/db?binary_parameters=yes&idle_in_transaction_session_timeout=10000"),
		Entry("keyword list", "host=h dbname=db", "host=h dbname=db binary_parameters=yes idle_in_transaction_session_timeout=10000"),
		Entry("the operator's own choice", "postgres://h/db?binary_parameters=no&idle_in_transaction_session_timeout=5000",
			"postgres://h/db?binary_parameters=no&idle_in_transaction_session_timeout=5000"),
	)

	It("ends a cut-off board's idle transactions before another board would take its lease over", func() {
		Expect(sqldb.IdleTransactionLimit).To(BeNumerically("<", convergence.DefaultLeaseTTL))
	})

	// Registered where Postgres runs (CORKBOARD_POSTGRES_DSN).
	if !slices.Contains(testdb.MustDialects(), testdb.Postgres) {
		return
	}
	It("makes Postgres end a transaction its board left idle", func() {
		database, err := testdb.Create(testdb.Postgres)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)
		conn, err := sqldb.Open(context.Background(), testdb.Postgres, database.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		var timeout string
		Expect(conn.QueryRow("SHOW idle_in_transaction_session_timeout").Scan(&timeout)).To(Succeed())
		Expect(timeout).To(Equal("10s"))
	})

	DescribeTable("MySQL gets the parameters the board relies on",
		func(dsn string, ioTimeout time.Duration, want string) {
			Expect(sqldb.MySQLDSN(dsn, ioTimeout)).To(Equal(want))
		},
		Entry("bare", "root@tcp(h:3306)/db", time.Duration(0), "root@tcp(h:3306)/db?multiStatements=true&parseTime=false&interpolateParams=true"),
		Entry("the operator's own choice", "root@tcp(h:3306)/db?interpolateParams=false", time.Duration(0),
			"root@tcp(h:3306)/db?interpolateParams=false&multiStatements=true&parseTime=false"),
		Entry("an I/O timeout, as the board's database_timeout", "root@tcp(h:3306)/db", 2*time.Second,
			"root@tcp(h:3306)/db?multiStatements=true&parseTime=false&interpolateParams=true&readTimeout=2s&writeTimeout=2s&timeout=2s"),
		Entry("an I/O timeout the operator's DSN overrides", "root@tcp(h:3306)/db?readTimeout=30s", 2*time.Second,
			"root@tcp(h:3306)/db?readTimeout=30s&multiStatements=true&parseTime=false&interpolateParams=true&writeTimeout=2s&timeout=2s"),
	)

	// Registered where MySQL runs (CORKBOARD_MYSQL_DSN): MariaDB here.
	if slices.Contains(testdb.MustDialects(), testdb.MySQL) {
		It("makes MariaDB end a transaction its board left idle, releasing its row locks", func() {
			database, err := testdb.Create(testdb.MySQL)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(database.Drop)
			ctx := context.Background()
			conn, err := sqldb.Open(ctx, testdb.MySQL, database.DSN)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			var limit int
			Expect(conn.QueryRow("SELECT @@SESSION.idle_transaction_timeout").Scan(&limit)).To(Succeed())
			Expect(limit).To(Equal(10), "the board's default")

			// The operator's own choice, shorter, shows what the limit does.
			cut, err := sqldb.Open(ctx, testdb.MySQL, database.DSN+"?idle_transaction_timeout=1")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(cut.Close)
			Expect(cut.QueryRow("SELECT @@SESSION.idle_transaction_timeout").Scan(&limit)).To(Succeed())
			Expect(limit).To(Equal(1), "the operator's choice is kept")
			_, err = conn.Exec("CREATE TABLE locked (id INT PRIMARY KEY, v INT)")
			Expect(err).NotTo(HaveOccurred())
			_, err = conn.Exec("INSERT INTO locked VALUES (1, 0)")
			Expect(err).NotTo(HaveOccurred())
			tx, err := cut.BeginTx(ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			_, err = tx.Exec("UPDATE locked SET v = 1 WHERE id = 1")
			Expect(err).NotTo(HaveOccurred())

			// The cut board's transaction now waits on a board that never
			// comes back. Another writer of the row waits at most 10 s
			// (50 s by default) instead of until a proxy gives up.
			other, err := conn.Conn(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(other.Close)
			_, err = other.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 10")
			Expect(err).NotTo(HaveOccurred())
			started := time.Now()
			_, err = other.ExecContext(ctx, "UPDATE locked SET v = 2 WHERE id = 1")
			Expect(err).NotTo(HaveOccurred(), "the idle transaction was ended and its lock released")
			Expect(time.Since(started)).To(BeNumerically("<", 10*time.Second))
			var v int
			Expect(conn.QueryRow("SELECT v FROM locked WHERE id = 1").Scan(&v)).To(Succeed())
			Expect(v).To(Equal(2), "the idle transaction's write was rolled back, the other writer's applied")
			Expect(tx.Commit()).NotTo(Succeed(), "the cut board's transaction is over")
		})
	}

	It("refuses a MySQL DSN that runs one statement per round trip", func() {
		_, err := sqldb.Open(context.Background(), sqldb.MySQL, "root@tcp(127.0.0.1:1)/db?multiStatements=false")
		Expect(err).To(MatchError(ContainSubstring("multiStatements")))
	})

	It("makes a SQLite database 0600 in a 0700 folder, its WAL files too, and tightens a looser one", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "data")
		path := filepath.Join(dir, "board.db")
		conn, err := sqldb.Open(context.Background(), sqldb.SQLite, path)
		Expect(err).NotTo(HaveOccurred())
		_, err = conn.Exec("CREATE TABLE t (x INTEGER)")
		Expect(err).NotTo(HaveOccurred())
		mode := func(name string) os.FileMode {
			GinkgoHelper()
			info, err := os.Stat(name)
			Expect(err).NotTo(HaveOccurred())
			return info.Mode().Perm()
		}
		Expect(mode(dir)).To(Equal(os.FileMode(0o700)))
		Expect(mode(path)).To(Equal(os.FileMode(0o600)))
		Expect(mode(path+"-wal")).To(Equal(os.FileMode(0o600)), "SQLite gives it the database file's mode")
		Expect(conn.Close()).To(Succeed())

		Expect(os.Chmod(path, 0o644)).To(Succeed())
		conn, err = sqldb.Open(context.Background(), sqldb.SQLite, path)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		Expect(mode(path)).To(Equal(os.FileMode(0o600)))
	})

	It("refuses a MySQL DSN that makes affected rows count matched rows", func() {
		_, err := sqldb.Open(context.Background(), sqldb.MySQL, "root@tcp(127.0.0.1:1)/db?clientFoundRows=true")
		Expect(err).To(MatchError(ContainSubstring("clientFoundRows")))
	})
})
