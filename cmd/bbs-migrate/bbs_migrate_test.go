package main_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

const timeout = 60 * time.Second

// The binary is built at run time, out of sight of go test's cache; the
// import of migrations above makes a change there re-run these tests.

var _ = Describe("bbs-migrate", func() {
	for _, dialect := range testdb.MustDialects() {
		Context("on "+dialect, func() {
			var dsn string

			run := func(args ...string) *gexec.Session {
				cmd := exec.Command(binary, append([]string{"--driver", dialect, "--dsn", dsn}, args...)...)
				session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
				Expect(err).NotTo(HaveOccurred())
				Eventually(session, timeout).Should(gexec.Exit())
				return session
			}

			open := func() *sql.DB {
				conn, err := sqldb.Open(context.Background(), dialect, dsn)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(conn.Close)
				return conn
			}

			versionCount := func() int {
				var n int
				Expect(open().QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&n)).To(Succeed())
				return n
			}

			BeforeEach(func() {
				d, err := testdb.Create(dialect)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(d.Drop)
				dsn = d.DSN
			})

			It("shows, plans, applies step by step and validates a fresh database", func() {
				all := embedded(dialect)
				latest := len(all)

				s := run("status")
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say(`database at version 0000 of %04d, clean, %d pending`, latest, latest))
				for _, m := range all {
					Expect(s.Out).To(gbytes.Say(`%04d\s+%s\s+pending`, m.Version, m.Name))
				}

				s = run("validate")
				Expect(s).To(gexec.Exit(1))
				Expect(s.Err).To(gbytes.Say(`bbs-migrate: database schema does not match this binary:\s+0001_create_tables is pending`))

				s = run("plan")
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say(`CREATE TABLE IF NOT EXISTS schema_migrations`))
				Expect(s.Out).To(gbytes.Say(`-- 0001_create_tables \(checksum [0-9a-f]{64}\)`))
				Expect(s.Out).To(gbytes.Say(`CREATE TABLE IF NOT EXISTS desired_lrps`))
				for _, m := range all[1:] {
					Expect(s.Out).To(gbytes.Say(`-- %s \(checksum %s\)`, m.ID(), m.Checksum))
				}
				if dialect == testdb.SQLite {
					_, err := os.Stat(dsn)
					Expect(os.IsNotExist(err)).To(BeTrue(), "plan must not create the SQLite file")
				} else {
					Expect(run("status").Out).To(gbytes.Say("0 of %04d", latest), "plan changed nothing")
				}

				s = run("up", "--target", "1")
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say("applied 0001_create_tables\n"))
				Expect(s.Out).NotTo(gbytes.Say("0002"))
				Expect(versionCount()).To(Equal(1))

				s = run("status")
				Expect(s.Out).To(gbytes.Say(`version 0001 of %04d, clean, %d pending`, latest, latest-1))
				Expect(s.Out).To(gbytes.Say(`0001\s+create_tables\s+applied\s+\d{4}-`))
				for _, m := range all[1:] {
					Expect(s.Out).To(gbytes.Say(`%04d\s+%s\s+pending`, m.Version, m.Name))
				}

				s = run("up")
				Expect(s).To(gexec.Exit(0))
				for _, m := range all[1:] {
					Expect(s.Out).To(gbytes.Say("applied %s\n", m.ID()))
				}

				s = run("up")
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say("nothing to do"))

				s = run("validate")
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say("ok: the database is at version %04d", latest))
				Expect(versionCount()).To(Equal(latest))
			})

			It("fails validate when an applied checksum differs", func() {
				Expect(run("up")).To(gexec.Exit(0))
				_, err := open().Exec("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 2")
				Expect(err).NotTo(HaveOccurred())

				s := run("validate")
				Expect(s).To(gexec.Exit(1))
				Expect(s.Err).To(gbytes.Say("0002_import_legacy was applied with checksum tampered"))
				status := run("status")
				Expect(status.Out).To(gbytes.Say(`applied differently from this binary's migrations: 0002_import_legacy \(validate fails; see the table\)`))
				Expect(status.Out).To(gbytes.Say(`0002\s+import_legacy\s+modified`))
				up := run("up")
				Expect(up).To(gexec.Exit(0))
				Expect(up.Out).To(gbytes.Say("nothing to do"))
				Expect(up.Err).To(gbytes.Say(`warning: applied differently from this binary's migrations: 0002_import_legacy`))
			})

			It("refuses a dirty database, and retries it on request", func() {
				// Stuck at the import; the later migrations are still pending.
				Expect(run("up", "--target", "2")).To(gexec.Exit(0))
				_, err := open().Exec("UPDATE schema_migrations SET dirty = TRUE WHERE version = 2")
				Expect(err).NotTo(HaveOccurred())

				Expect(run("status").Out).To(gbytes.Say(`DIRTY`))
				s := run("up")
				Expect(s).To(gexec.Exit(1))
				Expect(s.Err).To(gbytes.Say(`database is dirty: migration 0002_import_legacy`))
				Expect(s.Err).To(gbytes.Say(`--retry-dirty`))

				s = run("up", "--retry-dirty")
				Expect(s).To(gexec.Exit(0))
				for _, m := range embedded(dialect)[1:] {
					Expect(s.Out).To(gbytes.Say("applied %s\n", m.ID()))
				}
				Expect(run("validate")).To(gexec.Exit(0))
			})

			It("refuses a database newer than itself", func() {
				Expect(run("up")).To(gexec.Exit(0))
				later := len(embedded(dialect)) + 1
				_, err := open().Exec(fmt.Sprintf("INSERT INTO schema_migrations (version, name, checksum, applied_at, dirty) VALUES (%d, 'later', 'x', 1, FALSE)", later))
				Expect(err).NotTo(HaveOccurred())

				s := run("up")
				Expect(s).To(gexec.Exit(1))
				Expect(s.Err).To(gbytes.Say("database schema is newer than this binary: the database has migration %04d_later", later))
				status := run("status").Out
				Expect(status).To(gbytes.Say(`migrated by a newer corkboard than this binary \(migrations unknown to it: 1\): a bbs of this version refuses the database; upgrade`))
				Expect(status).To(gbytes.Say(`%04d\s+later\s+unknown to this binary`, later))
			})

			It("imports the classic fixture", func() {
				fixture, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "legacy", dialect+".sql"))
				Expect(err).NotTo(HaveOccurred())
				// The fixture loads as one script, the way a database's own client would feed it.
				_, err = open().Exec(string(fixture))
				Expect(err).NotTo(HaveOccurred())

				Expect(run("status").Out).To(gbytes.Say("a classic BBS schema is waiting to be imported"))
				s := run("plan")
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say(`legacy_desired_lrps`))
				Expect(s.Out).To(gbytes.Say(`Go step import_classic_bbs: import 4 rows of desired_lrps, 8 rows of actual_lrps, 2 rows of domains`))

				Expect(run("up")).To(gexec.Exit(0))
				Expect(run("validate")).To(gexec.Exit(0))
				var lrps, instances, stamped int
				conn := open()
				Expect(conn.QueryRow("SELECT COUNT(*) FROM desired_lrps WHERE active_definition_id = '" + migrations.LegacyDefinitionID + "'").Scan(&lrps)).To(Succeed())
				Expect(conn.QueryRow("SELECT COUNT(*) FROM actual_lrps").Scan(&instances)).To(Succeed())
				Expect(conn.QueryRow("SELECT COUNT(*) FROM actual_lrps WHERE definition_id = '" + migrations.LegacyDefinitionID + "'").Scan(&stamped)).To(Succeed())
				Expect([]int{lrps, instances, stamped}).To(Equal([]int{4, 8, 8}))
			})
		})
	}

	Describe("bad invocations", func() {
		runRaw := func(args ...string) *gexec.Session {
			session, err := gexec.Start(exec.Command(binary, args...), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(session, timeout).Should(gexec.Exit())
			return session
		}

		It("names a missing --dsn", func() {
			s := runRaw("status")
			Expect(s).To(gexec.Exit(1))
			Expect(s.Err).To(gbytes.Say("bbs-migrate: --dsn is required"))
		})

		It("names an unknown driver", func() {
			s := runRaw("--driver", "oracle", "--dsn", "x", "status")
			Expect(s).To(gexec.Exit(1))
			Expect(s.Err).To(gbytes.Say(`unknown database driver "oracle"`))
		})

		It("names a bad target", func() {
			dsn := filepath.Join(GinkgoT().TempDir(), "board.db")
			latest := len(embedded(testdb.SQLite))
			s := runRaw("--dsn", dsn, "up", "--target", fmt.Sprint(latest+1))
			Expect(s).To(gexec.Exit(1))
			Expect(s.Err).To(gbytes.Say(`target version %d: must be between 1 and %d`, latest+1, latest))
		})

		It("names an unknown command", func() {
			s := runRaw("down")
			Expect(s).To(gexec.Exit(1))
			Expect(s.Err).To(gbytes.Say(`unknown command "down"`))
		})
	})
})

// embedded lists the migrations the binary carries for dialect, so the
// expectations follow when a migration is added.
func embedded(dialect string) []migrations.Migration {
	r, err := migrations.NewRunner(nil, dialect)
	Expect(err).NotTo(HaveOccurred())
	ms := r.Migrations()
	Expect(len(ms)).To(BeNumerically(">=", 2), "the import is migration 0002")
	Expect(ms[1].ID()).To(Equal("0002_import_legacy"))
	return ms
}
