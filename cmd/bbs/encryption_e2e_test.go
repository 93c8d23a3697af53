package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Encryption at rest through the built board: with encryption_keys in its
// config, a secret in a definition's environment is nowhere in the SQLite
// file, it reads back whole, and a board restarted with a new active key
// re-encrypts what the old one wrote, by itself, at start.
var _ = Describe("bbs with encryption_keys", func() {
	const secret = "hunter2-SECRET-7731"
	var dataDir string

	key := func(b byte) string {
		return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune('a'+b)), 32)))
	}
	config := func(keys map[string]string, active string) string {
		var pairs []string
		for label, material := range keys {
			pairs = append(pairs, fmt.Sprintf("%q: %q", label, material))
		}
		path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
		text := fmt.Sprintf(`{"listen_address": "127.0.0.1:0", "data_dir": %q, "encryption_keys": {%s}, "active_key_label": %q}`,
			dataDir, strings.Join(pairs, ", "), active)
		Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
		return path
	}
	// onDisk is everything SQLite holds: the database file and its WAL.
	onDisk := func() string {
		var all []byte
		for _, name := range []string{"board.db", "board.db-wal"} {
			b, err := os.ReadFile(filepath.Join(dataDir, name))
			if err == nil {
				all = append(all, b...)
			}
		}
		return string(all)
	}

	BeforeEach(func() {
		dataDir = filepath.Join(GinkgoT().TempDir(), "data")
	})

	It("keeps a definition's secret out of the database, reads it back, and re-encrypts under a new active key at start", func() {
		board := startBoard("-config", config(map[string]string{"k1": key(1)}, "k1"))
		Expect(string(board.session.Out.Contents())).To(MatchRegexp(`"message":"bbs.encryption-at-rest".*"active_key_label":"k1"`))
		answer := board.post("/v1/desired_lrps/desire", fmt.Sprintf(`{"desired_lrp": {"process_guid": "web", "domain": "e2e", "instances": 1,
			"definition": {"action": {"path": "/bin/sleep", "args": ["3600"], "env": [{"name": "DB_PASSWORD", "value": %q}]}}}}`, secret))
		Expect(answer).NotTo(HaveKey("error"))
		got := board.post("/v1/desired_lrps/get", `{"process_guid": "web"}`)
		Expect(fmt.Sprint(got)).To(ContainSubstring(secret), "it reads back whole")
		board.stop(os.Interrupt)
		Expect(onDisk()).NotTo(BeEmpty())
		Expect(onDisk()).NotTo(ContainSubstring(secret))

		// k2 active, k1 kept to read what it wrote: the board re-encrypts
		// every row under k2 in the background.
		board = startBoard("-config", config(map[string]string{"k1": key(1), "k2": key(2)}, "k2"))
		Eventually(func() string { return string(board.session.Out.Contents()) }).Should(
			MatchRegexp(`"message":"bbs.rotate-keys.pass".*"Reencrypted":[1-9].*"pass":1`), "the first pass re-encrypts what k1 wrote")
		Eventually(func() string { return string(board.session.Out.Contents()) }).Should(MatchRegexp(`"message":"bbs.rotate-keys.pass".*"pass":2`))
		got = board.post("/v1/desired_lrps/get", `{"process_guid": "web"}`)
		Expect(fmt.Sprint(got)).To(ContainSubstring(secret))
		board.stop(os.Interrupt)

		// Only k2 now: everything reads, since nothing is left under k1.
		board = startBoard("-config", config(map[string]string{"k2": key(2)}, "k2"))
		got = board.post("/v1/desired_lrps/get", `{"process_guid": "web"}`)
		Expect(fmt.Sprint(got)).To(ContainSubstring(secret))
		ops := board.post("/v1/operations/list", `{"process_guid": "web"}`)
		Expect(ops).NotTo(HaveKey("error"))
		Expect(onDisk()).NotTo(ContainSubstring(secret))
	})
})
