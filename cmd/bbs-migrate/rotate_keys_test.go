package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

const rotateSecret = "hunter2-SECRET-1234"

// rotateKey is a test key's config value: 32 bytes of its own.
func rotateKey(label string) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{label[len(label)-1]}, 32))
}

// writeBoardConfig writes a board config file with the keys (labels,
// active first) and whatever else extra holds.
func writeBoardConfig(extra map[string]any, active string, others ...string) string {
	cfg := map[string]any{
		"listen_address": "127.0.0.1:8889",
		"log_level":      "info",
	}
	if active != "" {
		keys := map[string]string{active: rotateKey(active)}
		for _, l := range others {
			keys[l] = rotateKey(l)
		}
		cfg["encryption_keys"] = keys
		cfg["active_key_label"] = active
	}
	for k, v := range extra {
		cfg[k] = v
	}
	raw, err := json.Marshal(cfg)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
	Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	return path
}

func keyring(active string, others ...string) *sqldb.Keyring {
	keys := map[string]string{active: rotateKey(active)}
	for _, l := range others {
		keys[l] = rotateKey(l)
	}
	k, err := sqldb.ParseEncryptionKeys(keys, active)
	Expect(err).NotTo(HaveOccurred())
	return k
}

func secretLRP(guid string) *models.DesiredLRP {
	return &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "rotate",
		Instances:   1,
		Definition: &models.LRPDefinition{
			DefinitionId: "v1",
			Action: &models.RunAction{
				Path: "/bin/app",
				Env:  []*models.EnvironmentVariable{{Name: "DB_PASSWORD", Value: rotateSecret + "-" + guid}},
			},
			MemoryMb: 64,
			DiskMb:   64,
		},
	}
}

// labels counts run_infos and operations blobs by the key they are under
// ("" for plain).
func labels(conn *sql.DB) map[string]int {
	counts := map[string]int{}
	for _, query := range []string{"SELECT definition FROM run_infos", "SELECT parameters FROM operations WHERE parameters IS NOT NULL"} {
		rows, err := conn.Query(query)
		Expect(err).NotTo(HaveOccurred())
		for rows.Next() {
			var blob []byte
			Expect(rows.Scan(&blob)).To(Succeed())
			label, _, err := sqldb.EnvelopeLabel(blob)
			Expect(err).NotTo(HaveOccurred())
			counts[label]++
		}
		Expect(rows.Err()).NotTo(HaveOccurred())
		rows.Close()
	}
	return counts
}

var _ = Describe("bbs-migrate rotate-keys", func() {
	for _, dialect := range testdb.MustDialects() {
		Context("on "+dialect, func() {
			var dsn string
			var conn *sql.DB

			run := func(args ...string) *gexec.Session {
				cmd := exec.Command(binary, append([]string{"--driver", dialect, "--dsn", dsn}, args...)...)
				session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
				Expect(err).NotTo(HaveOccurred())
				Eventually(session, timeout).Should(gexec.Exit())
				return session
			}

			BeforeEach(func() {
				d, err := testdb.Create(dialect)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(d.Drop)
				dsn = d.DSN
				Expect(run("up")).To(gexec.Exit(0))
				conn, err = sqldb.Open(context.Background(), dialect, dsn)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(conn.Close)

				// A board that ran without keys, then with k1; and a run
				// cut short: one row already under k2.
				ctx := context.Background()
				_, err = sqldb.New(conn, dialect).DesireLRP(ctx, secretLRP("plain"))
				Expect(err).NotTo(HaveOccurred())
				for _, guid := range []string{"web", "api", "worker"} {
					_, err = sqldb.New(conn, dialect, sqldb.WithEncryption(keyring("k1"))).DesireLRP(ctx, secretLRP(guid))
					Expect(err).NotTo(HaveOccurred())
				}
				_, err = sqldb.New(conn, dialect, sqldb.WithEncryption(keyring("k2", "k1"))).DesireLRP(ctx, secretLRP("done"))
				Expect(err).NotTo(HaveOccurred())
				Expect(labels(conn)).To(Equal(map[string]int{"": 2, "k1": 6, "k2": 2}))
			})

			It("re-encrypts what is not under the active key, printing progress, and a second run finds nothing to do", func() {
				config := writeBoardConfig(nil, "k2", "k1")
				s := run("rotate-keys", "--config", config, "--batch-size", "2", "--progress-every", "0")
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say(`rotating to key "k2" \(encryption_keys: k1 k2\) on %s, batches of 2\n`, dialect))
				Expect(s.Out).To(gbytes.Say(`pass 1: run_infos 2 seen, \d re-encrypted, 0 skipped\n`))
				Expect(s.Out).To(gbytes.Say(`pass 1: run_infos 4 seen, \d re-encrypted, 0 skipped\n`))
				Expect(s.Out).To(gbytes.Say(`pass 1: run_infos 5 seen, 4 re-encrypted, 0 skipped\n`))
				Expect(s.Out).To(gbytes.Say(`pass 1: operations 2 seen, `))
				Expect(s.Out).To(gbytes.Say(`pass 1: run_infos 5 seen, 4 re-encrypted, 0 skipped; operations 5 seen, 4 re-encrypted, 0 skipped in \S+\n`))
				Expect(s.Out).To(gbytes.Say(`pass 2: run_infos 5 seen, 0 re-encrypted, 0 skipped; operations 5 seen, 0 re-encrypted, 0 skipped in \S+\n`))
				Expect(s.Out).To(gbytes.Say(`done: 8 rows re-encrypted under key "k2"; pass 2 found nothing left plain or under another key\n`))
				Expect(labels(conn)).To(Equal(map[string]int{"k2": 10}))

				s = run("rotate-keys", "--config", config)
				Expect(s).To(gexec.Exit(0))
				Expect(s.Out).To(gbytes.Say(`pass 1: run_infos 5 seen, 0 re-encrypted, 0 skipped; operations 5 seen, 0 re-encrypted, 0 skipped`))
				Expect(s.Out).To(gbytes.Say(`nothing to do: all 10 rows are under key "k2"\n`))

				// The old key can go: a board with k2 alone reads everything.
				Expect(run("rotate-keys", "--config", writeBoardConfig(nil, "k2"))).To(gexec.Exit(0))
				store := sqldb.New(conn, dialect, sqldb.WithEncryption(keyring("k2")))
				for _, guid := range []string{"plain", "web", "api", "worker", "done"} {
					def, err := store.Definition(context.Background(), guid, "v1")
					Expect(err).NotTo(HaveOccurred())
					Expect(def.Action.Env[0].Value).To(Equal(rotateSecret + "-" + guid))
				}
				ops, _, err := store.Operations(context.Background(), db.OperationFilter{})
				Expect(err).NotTo(HaveOccurred())
				Expect(ops).To(HaveLen(5))
			})

			It("stops at a row under a key the config does not have, naming both", func() {
				s := run("rotate-keys", "--config", writeBoardConfig(nil, "k2"))
				Expect(s).To(gexec.Exit(1))
				Expect(s.Err).To(gbytes.Say(`bbs-migrate: InvalidRecord: run_infos \w+/v1: encrypted under key "k1", which is not among encryption_keys`))
				Expect(labels(conn)["k1"]).To(Equal(6), "nothing under k1 was touched")
			})
		})
	}

	Describe("its configuration", func() {
		runRaw := func(args ...string) *gexec.Session {
			session, err := gexec.Start(exec.Command(binary, args...), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(session, timeout).Should(gexec.Exit())
			return session
		}

		It("takes the database from the board's config when there is no --dsn", func() {
			dataDir := GinkgoT().TempDir()
			dbPath := filepath.Join(dataDir, "board.db")
			Expect(runRaw("--dsn", dbPath, "up")).To(gexec.Exit(0))
			conn, err := sqldb.Open(context.Background(), testdb.SQLite, dbPath)
			Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			_, err = sqldb.New(conn, testdb.SQLite).DesireLRP(context.Background(), secretLRP("web"))
			Expect(err).NotTo(HaveOccurred())

			s := runRaw("rotate-keys", "--config", writeBoardConfig(map[string]any{"data_dir": dataDir}, "k1"))
			Expect(s).To(gexec.Exit(0))
			Expect(s.Out).To(gbytes.Say(`rotating to key "k1" \(encryption_keys: k1\) on sqlite`))
			Expect(s.Out).To(gbytes.Say(`done: 2 rows re-encrypted under key "k1"`))
			Expect(labels(conn)).To(Equal(map[string]int{"k1": 2}))

			s = runRaw("rotate-keys", "--config", writeBoardConfig(map[string]any{"database_driver": "sqlite", "database_dsn": dbPath}, "k1"))
			Expect(s).To(gexec.Exit(0))
			Expect(s.Out).To(gbytes.Say(`nothing to do: all 2 rows are under key "k1"`))
		})

		It("names what is wrong", func() {
			dbPath := filepath.Join(GinkgoT().TempDir(), "board.db")
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--dsn", dbPath, "rotate-keys"}, `--config is required`},
				{[]string{"--dsn", dbPath, "rotate-keys", "--config", writeBoardConfig(nil, "")}, `no encryption_keys: there is no key to rotate to`},
				{[]string{"--dsn", dbPath, "rotate-keys", "--config", writeBoardConfig(map[string]any{"encryption_keys": map[string]string{"k1": base64.StdEncoding.EncodeToString(make([]byte, 12))}}, "k1")},
					`encryption_keys\["k1"\]: must be base64 of 32 bytes \(AES-256\), got 12 bytes`},
				{[]string{"--dsn", dbPath, "rotate-keys", "--config", writeBoardConfig(map[string]any{"active_key_label": "k3"}, "k1", "k2")},
					`active_key_label "k3" is not among encryption_keys \[k1 k2\]`},
				{[]string{"--dsn", dbPath, "rotate-keys", "--config", writeBoardConfig(nil, "k1")}, fmt.Sprintf(`no sqlite database at %s`, dbPath)},
				{[]string{"rotate-keys", "--config", writeBoardConfig(nil, "k1")}, `--dsn is required, unless the config has database_dsn \(or data_dir, for sqlite\)`},
				{[]string{"--dsn", dbPath, "rotate-keys", "--config", filepath.Join(GinkgoT().TempDir(), "missing.json")}, `config: open .*missing.json: no such file`},
			} {
				s := runRaw(c.args...)
				Expect(s).To(gexec.Exit(1))
				Expect(s.Err).To(gbytes.Say(c.want))
			}
		})
	})
})
