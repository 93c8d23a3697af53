package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sync"
	"testing/fstest"
	"time"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// boardTablesOf is every table the latest schema has on dialect: the
// server databases also keep commit receipts.
func boardTablesOf(dialect string) []string {
	if dialect == testdb.SQLite {
		return boardTables
	}
	tables := append([]string{"commit_receipts"}, boardTables...)
	slices.Sort(tables)
	return tables
}

// boardTables is every table the latest schema has on SQLite.
var boardTables = []string{"actual_lrps", "budget_groups", "cells", "crashes", "desired_lrps", "domains", "event_log", "event_log_head", "event_outbox", "freeze_windows", "leases", "operations", "placement_epoch", "rollouts", "run_infos", "schema_migrations"}

var _ = Describe("Runner", func() {
	for _, dialect := range testdb.MustDialects() {
		Context("on "+dialect, func() {
			var (
				ctx    context.Context
				conn   *sql.DB
				dsn    string
				runner *migrations.Runner
			)

			BeforeEach(func() {
				ctx = context.Background()
				conn, dsn = freshDB(dialect)
				runner = newRunner(conn, dialect)
			})

			Describe("a fresh database", func() {
				It("gets every table and one clean version row per migration", func() {
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())

					Expect(tables(conn, dialect)).To(Equal(boardTablesOf(dialect)))
					st, err := runner.Status(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(st.Current).To(Equal(runner.Latest()))
					Expect(st.Dirty).To(BeFalse())
					Expect(st.Pending()).To(BeEmpty())
					Expect(st.Migrations).To(HaveLen(runner.Latest()))
					for _, m := range st.Migrations {
						Expect(m.Applied).To(BeTrue(), m.ID())
						Expect(m.AppliedChecksum).To(Equal(m.Checksum), m.ID())
						Expect(m.AppliedAt.IsZero()).To(BeFalse(), m.ID())
					}
					Expect(runner.Validate(ctx)).To(Succeed())
				})

				if dialect == testdb.Postgres {
					It("compares guids byte by byte, as SQLite and MySQL do", func() {
						Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
						Expect(strings1(conn, `SELECT table_name || '.' || column_name || ' ' || COALESCE(collation_name, '')
 FROM information_schema.columns
 WHERE table_schema = current_schema() AND column_name IN ('process_guid', 'presence')
 ORDER BY table_name, column_name`)).To(Equal([]string{
							"actual_lrps.presence C",
							"actual_lrps.process_guid C",
							"crashes.process_guid C",
							"desired_lrps.process_guid C",
							"operations.process_guid C",
							"rollouts.process_guid C",
							"run_infos.process_guid C",
						}))
						// Ordering shows it too: byte order puts "Z" before "a".
						execSQL(conn, dialect, "INSERT INTO domains (domain, expires_at) VALUES ('x', 0)")
						execSQL(conn, dialect, `INSERT INTO desired_lrps (process_guid, domain, instances, active_definition_id,
 modification_tag_epoch, created_at, updated_at) VALUES ('a-lrp', 'x', 0, 'v1', 'e', 0, 0), ('Z-lrp', 'x', 0, 'v1', 'e', 0, 0)`)
						Expect(strings1(conn, "SELECT process_guid FROM desired_lrps ORDER BY process_guid")).
							To(Equal([]string{"Z-lrp", "a-lrp"}))
					})
				}

				It("is left alone when Up runs again", func() {
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
					execSQL(conn, dialect, "INSERT INTO domains (domain, expires_at) VALUES (?, ?)", "cf-apps", 42)
					before := versionRows(conn)

					applied, err := runner.Up(ctx, migrations.UpOptions{})
					Expect(err).NotTo(HaveOccurred())
					Expect(applied).To(BeEmpty())
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())

					Expect(versionRows(conn)).To(Equal(before))
					Expect(strings1(conn, "SELECT domain FROM domains")).To(Equal([]string{"cf-apps"}))
				})

				It("reports every migration pending without creating anything", func() {
					st, err := runner.Status(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(st.Current).To(Equal(0))
					Expect(st.Classic).To(BeFalse())
					Expect(st.Pending()).To(HaveLen(runner.Latest()))
					Expect(tables(conn, dialect)).To(BeEmpty())
				})

				It("previews the SQL Up would run and changes nothing", func() {
					preview, err := runner.Preview(ctx, migrations.UpOptions{})
					Expect(err).NotTo(HaveOccurred())
					Expect(preview.From).To(Equal(0))
					Expect(preview.To).To(Equal(runner.Latest()))
					Expect(preview.MoveClassicAway).To(BeEmpty())
					text := preview.SQL()
					Expect(text).To(ContainSubstring("CREATE TABLE IF NOT EXISTS schema_migrations"))
					Expect(text).To(ContainSubstring("-- 0001_create_tables"))
					Expect(text).To(ContainSubstring("CREATE TABLE IF NOT EXISTS run_infos"))
					Expect(text).To(ContainSubstring("-- 0002_import_legacy"))
					Expect(text).To(ContainSubstring("nothing to import"))
					for _, m := range runner.Migrations() {
						Expect(text).To(ContainSubstring("-- "+m.ID()), "every pending migration is previewed")
					}

					Expect(tables(conn, dialect)).To(BeEmpty())
				})

				It("previews nothing once migrated", func() {
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
					preview, err := runner.Preview(ctx, migrations.UpOptions{})
					Expect(err).NotTo(HaveOccurred())
					Expect(preview.Empty()).To(BeTrue())
					Expect(preview.SQL()).To(ContainSubstring("nothing to do"))
				})
			})

			Describe("a target version", func() {
				It("stops there, and the rest stays pending", func() {
					applied, err := runner.Up(ctx, migrations.UpOptions{Target: 1})
					Expect(err).NotTo(HaveOccurred())
					Expect(applied).To(HaveLen(1))
					Expect(applied[0].ID()).To(Equal("0001_create_tables"))

					st, err := runner.Status(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(st.Current).To(Equal(1))
					Expect(st.Pending()).To(HaveLen(runner.Latest() - 1))
					Expect(st.Pending()[0].ID()).To(Equal("0002_import_legacy"))

					err = runner.Validate(ctx)
					Expect(err).To(MatchError(migrations.ErrNotUpToDate))
					Expect(err.Error()).To(ContainSubstring("0002_import_legacy is pending"))

					preview, err := runner.Preview(ctx, migrations.UpOptions{})
					Expect(err).NotTo(HaveOccurred())
					Expect(preview.From).To(Equal(1))
					Expect(preview.SQL()).NotTo(ContainSubstring("0001_create_tables"))
					Expect(preview.SQL()).To(ContainSubstring("0002_import_legacy"))
				})

				It("refuses a target below the database's version, changing nothing", func() {
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
					before := versionRows(conn)
					_, err := runner.Up(ctx, migrations.UpOptions{Target: 1})
					Expect(err).To(MatchError(ContainSubstring("past target 0001")))
					Expect(versionRows(conn)).To(Equal(before))
				})

				It("refuses a target this binary does not have", func() {
					_, err := runner.Up(ctx, migrations.UpOptions{Target: runner.Latest() + 1})
					Expect(err).To(MatchError(ContainSubstring("target version")))
					Expect(tables(conn, dialect)).To(BeEmpty())
				})
			})

			Describe("validate", func() {
				It("fails when an applied migration's checksum differs from the embedded one", func() {
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
					execSQL(conn, dialect, "UPDATE schema_migrations SET checksum = ? WHERE version = ?", "0000beef", 1)

					err := runner.Validate(ctx)
					Expect(err).To(MatchError(migrations.ErrNotUpToDate))
					Expect(err.Error()).To(ContainSubstring("0001_create_tables was applied with checksum 0000beef"))
					Expect(err.Error()).To(ContainSubstring(runner.Migrations()[0].Checksum))

					st, err := runner.Status(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(st.Migrations[0].Modified()).To(BeTrue())
					Expect(st.Migrations[1].Modified()).To(BeFalse())
				})

				It("fails on a database nothing was applied to", func() {
					err := runner.Validate(ctx)
					Expect(err).To(MatchError(ContainSubstring("0001_create_tables is pending")))
				})
			})

			Describe("a dirty database", func() {
				BeforeEach(func() {
					// Stuck at the import, the migration most likely to fail
					// part-way; the later ones are still pending.
					_, err := runner.Up(ctx, migrations.UpOptions{Target: 2})
					Expect(err).NotTo(HaveOccurred())
					execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 2)
				})

				It("refuses to migrate, naming the version and the way out, and changes nothing", func() {
					before := versionRows(conn)
					err := migrations.Up(ctx, conn, dialect)
					Expect(err).To(MatchError(migrations.ErrDirty))
					var dirty *migrations.DirtyError
					Expect(errors.As(err, &dirty)).To(BeTrue())
					Expect(dirty.Version).To(Equal(2))
					Expect(err.Error()).To(ContainSubstring("0002_import_legacy"))
					Expect(err.Error()).To(ContainSubstring("--retry-dirty"))
					Expect(versionRows(conn)).To(Equal(before))

					_, err = runner.Preview(ctx, migrations.UpOptions{})
					Expect(err).To(MatchError(migrations.ErrDirty))
					Expect(runner.Validate(ctx)).To(MatchError(ContainSubstring("0002_import_legacy is dirty")))
				})

				It("re-runs the dirty migration when told to, then the pending ones", func() {
					applied, err := runner.Up(ctx, migrations.UpOptions{RetryDirty: true})
					Expect(err).NotTo(HaveOccurred())
					Expect(ids(applied)).To(Equal(ids(runner.Migrations()[1:])))
					Expect(runner.Validate(ctx)).To(Succeed())
				})
			})

			It("runs every migration again safely, which --retry-dirty relies on", func() {
				for _, m := range runner.Migrations() {
					_, err := runner.Up(ctx, migrations.UpOptions{Target: m.Version})
					Expect(err).NotTo(HaveOccurred())
					execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, m.Version)
					applied, err := runner.Up(ctx, migrations.UpOptions{Target: m.Version, RetryDirty: true})
					Expect(err).NotTo(HaveOccurred(), m.ID())
					Expect(applied).To(HaveLen(1))
					Expect(applied[0].ID()).To(Equal(m.ID()))
				}
				Expect(tables(conn, dialect)).To(Equal(boardTablesOf(dialect)))
				Expect(runner.Validate(ctx)).To(Succeed())
			})

			Describe("a database newer than the binary", func() {
				BeforeEach(func() {
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
					execSQL(conn, dialect, "INSERT INTO schema_migrations (version, name, checksum, applied_at, dirty) VALUES (?, ?, ?, ?, ?)",
						99, "from_the_future", "abc", 1, false)
				})

				It("is refused by Up, Preview and Validate, and left as it is", func() {
					before := versionRows(conn)
					err := migrations.Up(ctx, conn, dialect)
					Expect(err).To(MatchError(migrations.ErrDatabaseNewer))
					Expect(err.Error()).To(ContainSubstring("0099_from_the_future"))
					Expect(versionRows(conn)).To(Equal(before))

					_, err = runner.Preview(ctx, migrations.UpOptions{})
					Expect(err).To(MatchError(migrations.ErrDatabaseNewer))
					Expect(runner.Validate(ctx)).To(MatchError(migrations.ErrDatabaseNewer))
				})
			})

			Describe("two boards starting at once", func() {
				It("migrate once, and both come up on one correct schema", func() {
					other := openDB(dialect, dsn)
					pools := []*sql.DB{conn, other, conn, other}

					var wg sync.WaitGroup
					results := make([][]migrations.Migration, len(pools))
					errs := make([]error, len(pools))
					for i, pool := range pools {
						wg.Add(1)
						go func() {
							defer GinkgoRecover()
							defer wg.Done()
							r, err := migrations.NewRunner(pool, dialect)
							Expect(err).NotTo(HaveOccurred())
							results[i], errs[i] = r.Up(ctx, migrations.UpOptions{})
						}()
					}
					wg.Wait()

					migrated := 0
					for i := range pools {
						Expect(errs[i]).NotTo(HaveOccurred())
						if len(results[i]) > 0 {
							migrated++
							Expect(results[i]).To(HaveLen(runner.Latest()))
						}
					}
					Expect(migrated).To(Equal(1), "exactly one board applies the migrations; the others find them done")
					Expect(tables(conn, dialect)).To(Equal(boardTablesOf(dialect)))
					Expect(versionRows(conn)).To(HaveLen(runner.Latest()))
					Expect(runner.Validate(ctx)).To(Succeed())
				})
			})

			if dialect != testdb.SQLite {
				Describe("the migration lock row", func() {
					It("waits while another board's lock runs, takes it once expired in a new tenure, and gives it up", func() {
						// A board died mid-migration holding the lock for 2 more seconds.
						_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migration_lock (
  name VARCHAR(64) NOT NULL PRIMARY KEY, owner VARCHAR(255) NOT NULL, expires_at BIGINT NOT NULL, tenure BIGINT NOT NULL DEFAULT 0)`)
						Expect(err).NotTo(HaveOccurred())
						execSQL(conn, dialect, "INSERT INTO migration_lock (name, owner, expires_at, tenure) VALUES (?, ?, ?, ?)",
							"migrations", "dead-board", time.Now().Add(2*time.Second).UnixNano(), 5)

						short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
						defer cancel()
						_, err = runner.Up(short, migrations.UpOptions{})
						Expect(err).To(MatchError(context.DeadlineExceeded), "the lock is held")
						Expect(tables(conn, dialect)).To(BeEmpty(), "nothing ran without the lock")

						applied, err := runner.Up(ctx, migrations.UpOptions{})
						Expect(err).NotTo(HaveOccurred())
						Expect(applied).To(HaveLen(runner.Latest()))
						var owner string
						var expires, tenure int64
						Expect(conn.QueryRowContext(ctx, "SELECT owner, expires_at, tenure FROM migration_lock WHERE name = 'migrations'").
							Scan(&owner, &expires, &tenure)).To(Succeed())
						Expect(owner).NotTo(Equal("dead-board"))
						Expect(tenure).To(BeEquivalentTo(6), "a new tenure")
						Expect(expires).To(BeZero(), "released at the end of the run")
					})
				})
			}

			Describe("a migration that fails part-way", func() {
				var broken, fixed *migrations.Runner
				// notes is one version past the latest embedded migration.
				var notes int

				BeforeEach(func() {
					Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
					notes = runner.Latest() + 1
					notesFile := path.Join("sql", dialect, fmt.Sprintf("%04d_add_notes.sql", notes))
					files := embeddedFiles(dialect)
					files[notesFile] = &fstest.MapFile{Data: []byte(
						"CREATE TABLE notes (id INTEGER NOT NULL PRIMARY KEY);\nSELECT no_such_column FROM notes;\n")}
					var err error
					broken, err = migrations.NewRunnerFS(conn, dialect, files)
					Expect(err).NotTo(HaveOccurred())
					files = embeddedFiles(dialect)
					files[notesFile] = &fstest.MapFile{Data: []byte(
						"CREATE TABLE IF NOT EXISTS notes (id INTEGER NOT NULL PRIMARY KEY);\n")}
					fixed, err = migrations.NewRunnerFS(conn, dialect, files)
					Expect(err).NotTo(HaveOccurred())
				})

				It("names the migration and statement that failed", func() {
					_, err := broken.Up(ctx, migrations.UpOptions{})
					var merr *migrations.MigrationError
					Expect(errors.As(err, &merr)).To(BeTrue())
					Expect(merr.Migration.ID()).To(Equal(fmt.Sprintf("%04d_add_notes", notes)))
					Expect(err.Error()).To(ContainSubstring("SELECT no_such_column FROM notes"))
				})

				if dialect == testdb.MySQL {
					It("leaves MySQL dirty, refuses until retried, and the fixed migration re-runs safely", func() {
						_, err := broken.Up(ctx, migrations.UpOptions{})
						Expect(err).To(HaveOccurred())
						Expect(tables(conn, dialect)).To(ContainElement("notes"), "MySQL committed the CREATE TABLE")

						_, err = fixed.Up(ctx, migrations.UpOptions{})
						var dirty *migrations.DirtyError
						Expect(errors.As(err, &dirty)).To(BeTrue())
						Expect(dirty.Version).To(Equal(notes))

						applied, err := fixed.Up(ctx, migrations.UpOptions{RetryDirty: true})
						Expect(err).NotTo(HaveOccurred())
						Expect(applied).To(HaveLen(1))
						Expect(fixed.Validate(ctx)).To(Succeed())
					})
				} else {
					It("rolls back completely: no table, no version row, not dirty", func() {
						before := versionRows(conn)
						_, err := broken.Up(ctx, migrations.UpOptions{})
						Expect(err).To(HaveOccurred())
						Expect(tables(conn, dialect)).NotTo(ContainElement("notes"))
						Expect(versionRows(conn)).To(Equal(before))

						applied, err := fixed.Up(ctx, migrations.UpOptions{})
						Expect(err).NotTo(HaveOccurred())
						Expect(applied).To(HaveLen(1))
						Expect(fixed.Validate(ctx)).To(Succeed())
					})
				}
			})
		})
	}

	It("refuses an unknown dialect", func() {
		_, err := migrations.NewRunner(nil, "oracle")
		Expect(err).To(MatchError(ContainSubstring(`unknown database dialect "oracle"`)))
	})
})

// embeddedFiles copies the dialect's migration files from disk into a
// MapFS that a test can add to.
func embeddedFiles(dialect string) fstest.MapFS {
	dir := path.Join("sql", dialect)
	entries, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	files := fstest.MapFS{}
	for _, e := range entries {
		data, err := os.ReadFile(path.Join(dir, e.Name()))
		Expect(err).NotTo(HaveOccurred())
		files[path.Join(dir, e.Name())] = &fstest.MapFile{Data: data}
	}
	return files
}

// ids names migrations in order, for comparing lists of them.
func ids(ms []migrations.Migration) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID()
	}
	return out
}
