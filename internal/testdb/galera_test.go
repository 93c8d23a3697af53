package testdb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

// The three-node Galera cluster behind HAProxy that the HA scenarios run
// boards on (e2e/chaos_ha_test.go): it forms, replicates a write through
// the front to every node, fails over to a new writer that has every row
// when the writer is SIGKILLed, and takes the killed node back.
var _ = Describe("A Galera cluster behind HAProxy", Label("ha-galera"), Ordered, func() {
	var (
		cluster *testdb.Galera
		// database holds the probe table the first two specs write.
		database *testdb.Database
		ctx      = context.Background()
	)

	BeforeAll(func() {
		began := time.Now()
		var err error
		cluster, err = testdb.StartGalera()
		if errors.Is(err, testdb.ErrNoGaleraBinaries) && os.Getenv(testdb.RequireEnv) != "1" {
			Skip(err.Error() + " (set " + testdb.RequireEnv + "=1 to make this a failure)")
		}
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(cluster.Close()).To(Succeed()) })
		AddReportEntry("galera: cluster of 3 and haproxy up in", time.Since(began).Round(time.Millisecond).String())
		database, err = testdb.CreateOn(cluster.Dialect(), cluster.AdminDSN())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)
	})

	// open connects to one node directly, or to the front for "".
	open := func(node, database string) *sql.DB {
		GinkgoHelper()
		dsn := cluster.AdminDSN()
		if node != "" {
			var err error
			dsn, err = cluster.NodeDSN(node)
			Expect(err).NotTo(HaveOccurred())
		}
		conn, err := sql.Open(testdb.MySQL, dsn+database+"?timeout=2s&readTimeout=5s&writeTimeout=5s")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		return conn
	}

	// countOn counts table's rows as node holds them.
	countOn := func(node, database, table string) func() (int, error) {
		conn := open(node, database)
		return func() (int, error) {
			var n int
			err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
			return n, err
		}
	}

	It("forms a cluster of three and replicates a write through the front to every node", func() {
		for _, node := range cluster.Nodes() {
			Expect(cluster.ClusterSize(node)).To(Equal(3), "wsrep_cluster_size on %s", node)
		}
		Expect(cluster.Writer()).To(Equal("galera-1"), "the front sends everything to the first node")

		name := database.DSN[strings.LastIndex(database.DSN, "/")+1:]
		front := open("", name)
		_, err := front.ExecContext(ctx, "CREATE TABLE probe (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL)")
		Expect(err).NotTo(HaveOccurred())
		for i := range 100 {
			_, err := front.ExecContext(ctx, "INSERT INTO probe (id, v) VALUES (?, ?)", i, fmt.Sprint("row ", i))
			Expect(err).NotTo(HaveOccurred())
		}
		for _, node := range cluster.Nodes() {
			// Galera applies on the others asynchronously after the
			// commit's certification: a read there may lag a moment.
			Eventually(countOn(node, name, "probe")).Should(Equal(100), "rows on %s", node)
		}
	})

	It("gives a new writer holding every row when the writer is SIGKILLed, and takes the killed node back", func() {
		name := database.DSN[strings.LastIndex(database.DSN, "/")+1:]
		killed, err := cluster.KillWriter()
		Expect(err).NotTo(HaveOccurred())
		Expect(killed).To(Equal("galera-1"))
		took, err := cluster.WaitForWriter(ctx)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("galera: kill to a write through the front", took.Round(time.Millisecond).String())
		writer, err := cluster.Writer()
		Expect(err).NotTo(HaveOccurred())
		Expect(writer).NotTo(Equal(killed))
		Expect(countOn("", name, "probe")()).To(Equal(100), "rows through the front after the failover")
		for _, node := range cluster.Nodes() {
			if node != killed {
				Expect(cluster.ClusterSize(node)).To(Equal(2), "wsrep_cluster_size on %s without %s", node, killed)
			}
		}
		_, err = open("", name).ExecContext(ctx, "INSERT INTO probe (id, v) VALUES (100, 'after the kill')")
		Expect(err).NotTo(HaveOccurred())

		began := time.Now()
		Expect(cluster.Restart(killed)).To(Succeed())
		AddReportEntry("galera: restart to synced in a cluster of 3", time.Since(began).Round(time.Millisecond).String())
		for _, node := range cluster.Nodes() {
			Expect(cluster.ClusterSize(node)).To(Equal(3), "wsrep_cluster_size on %s after the restart", node)
		}
		Eventually(countOn(killed, name, "probe")).Should(Equal(101), "the restarted node caught up")
		Expect(cluster.Writer()).To(Equal(writer), "the restarted node came back as a replica: the front stays on the new writer")
	})

	It("takes back by a whole snapshot (SST) a killed node that lost its state, writes going on meanwhile", func() {
		name := database.DSN[strings.LastIndex(database.DSN, "/")+1:]
		killed, err := cluster.KillWriter()
		Expect(err).NotTo(HaveOccurred())
		_, err = cluster.WaitForWriter(ctx)
		Expect(err).NotTo(HaveOccurred())
		front := open("", name)
		// A writer goes on through the front while the node rejoins: a
		// snapshot's donor is another node, so no write may fail.
		stop := make(chan struct{})
		failed := make(chan error, 1)
		written := make(chan int, 1)
		go func() {
			defer GinkgoRecover()
			n := 0
			for {
				select {
				case <-stop:
					written <- n
					return
				default:
				}
				if _, err := front.ExecContext(ctx, "INSERT INTO probe (id, v) VALUES (?, 'during the snapshot')", 1000+n); err != nil {
					failed <- err
					written <- n
					return
				}
				n++
				time.Sleep(20 * time.Millisecond)
			}
		}()
		began := time.Now()
		Expect(cluster.RestartBySnapshot(killed)).To(Succeed())
		AddReportEntry("galera: restart by snapshot (SST) to synced", time.Since(began).Round(time.Millisecond).String())
		close(stop)
		n := <-written
		Expect(failed).NotTo(Receive(), "a write failed while %s rejoined by snapshot", killed)
		Expect(n).To(BeNumerically(">", 10))
		for _, node := range cluster.Nodes() {
			Expect(cluster.ClusterSize(node)).To(Equal(3), "wsrep_cluster_size on %s after the snapshot", node)
		}
		Eventually(countOn(killed, name, "probe")).Should(Equal(101+n), "the node has every row")
		logPath, err := cluster.LogPath(killed)
		Expect(err).NotTo(HaveOccurred())
		log, err := os.ReadFile(logPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(MatchRegexp(`(?i)SST (request|received|complete)`), "%s rejoined by a snapshot", killed)
	})

	// Every board table has a primary key once migrated on Galera: Galera
	// replicates a row change by its key, and a table without one
	// replicates badly (DELETEs are refused with wsrep_certify_nonPK off,
	// and each applier scans the table otherwise).
	It("migrates a board's schema through the front, every table with a primary key", func() {
		db, err := testdb.CreateOn(cluster.Dialect(), cluster.AdminDSN())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(db.Drop)
		conn, err := sql.Open(testdb.MySQL, db.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		began := time.Now()
		Expect(migrations.Up(ctx, conn, testdb.MySQL)).To(Succeed())
		AddReportEntry("galera: migrations.Up through the front", time.Since(began).Round(time.Millisecond).String())
		name := db.DSN[strings.LastIndex(db.DSN, "/")+1:]
		rows, err := conn.QueryContext(ctx, `
			SELECT t.table_name FROM information_schema.tables t
			WHERE t.table_schema = ? AND t.table_type = 'BASE TABLE'
			AND NOT EXISTS (
				SELECT 1 FROM information_schema.table_constraints c
				WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name
				AND c.constraint_type = 'PRIMARY KEY')
			ORDER BY t.table_name`, name)
		Expect(err).NotTo(HaveOccurred())
		defer rows.Close()
		var withoutKey []string
		for rows.Next() {
			var table string
			Expect(rows.Scan(&table)).To(Succeed())
			withoutKey = append(withoutKey, table)
		}
		Expect(rows.Err()).NotTo(HaveOccurred())
		var tables int
		Expect(conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
			WHERE table_schema = ? AND table_type = 'BASE TABLE'`, name).Scan(&tables)).To(Succeed())
		Expect(tables).To(BeNumerically(">=", 10), "the migrations made the board's tables")
		AddReportEntry("galera: board tables without a primary key", fmt.Sprintf("%d of %d: %v", len(withoutKey), tables, withoutKey))
		Expect(withoutKey).To(BeEmpty())
	})

	// Boards on different nodes migrating at once: the migration lock is a
	// row (db/rowlock), which every node sees, where MySQL's GET_LOCK would
	// be each node's own and let both run. Exactly one applies the
	// migrations; the others wait for it and find them done.
	It("migrates once when boards on different nodes start at once", func() {
		db, err := testdb.CreateOn(cluster.Dialect(), cluster.AdminDSN())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(db.Drop)
		name := db.DSN[strings.LastIndex(db.DSN, "/")+1:]
		var pools []*sql.DB
		for _, node := range cluster.Nodes() {
			pool := open(node, name)
			// The front's node answered CREATE DATABASE once it was
			// certified; the others apply it a moment later.
			Eventually(pool.PingContext).WithArguments(ctx).Should(Succeed(), "%s has the database", node)
			pools = append(pools, pool)
		}
		applied := make([]int, len(pools))
		errs := make([]error, len(pools))
		done := make(chan struct{})
		for i, pool := range pools {
			go func() {
				defer GinkgoRecover()
				defer func() { done <- struct{}{} }()
				runner, err := migrations.NewRunner(pool, testdb.MySQL)
				Expect(err).NotTo(HaveOccurred())
				ran, err := runner.Up(ctx, migrations.UpOptions{})
				applied[i], errs[i] = len(ran), err
			}()
		}
		for range pools {
			<-done
		}
		migrated := 0
		for i := range pools {
			Expect(errs[i]).NotTo(HaveOccurred(), "the board on %s", cluster.Nodes()[i])
			if applied[i] > 0 {
				migrated++
			}
		}
		Expect(migrated).To(Equal(1), "exactly one board applies the migrations: %v", applied)
		runner, err := migrations.NewRunner(open("", name), testdb.MySQL)
		Expect(err).NotTo(HaveOccurred())
		Expect(runner.Validate(ctx)).To(Succeed())
	})
})
