package main

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/certs"
)

// exampleConfig is deploy/systemd/bbs.json with its /etc/corkboard/ paths
// moved to a directory holding the certificates corkboard-certs would
// write there (the config loads them).
func exampleConfig() string {
	GinkgoHelper()
	raw, err := os.ReadFile("../../deploy/systemd/bbs.json")
	Expect(err).NotTo(HaveOccurred())
	Expect(string(raw)).To(ContainSubstring(`"/etc/corkboard/`))
	dir := GinkgoT().TempDir()
	_, _, err = certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-1"}})
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "bbs.json")
	Expect(os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), `"/etc/corkboard/`, `"`+dir+"/")), 0o600)).To(Succeed())
	return path
}

var _ = Describe("deploy/systemd/bbs.json", func() {
	It("is a config the board accepts, its data_dir the unit's StateDirectory", func() {
		cfg, err := buildConfig(exampleConfig(), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.DataDir).To(Equal("/var/lib/corkboard-bbs"))
		Expect(cfg.TLS).NotTo(BeNil())
	})
})
