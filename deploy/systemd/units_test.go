package systemd_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// units are the service units here, each with the binary its ExecStart
// runs (installed as /usr/local/bin/<binary>) and its example config
// (installed as /etc/corkboard/<binary>.json).
var units = []struct{ file, binary string }{
	{"corkboard-bbs.service", "bbs"},
	{"corkboard-rep.service", "rep"},
}

// lookPath finds a tool the specs need, or fails naming the Debian
// package that has it (.ci/run installs it).
func lookPath(tool, debianPackage string) string {
	GinkgoHelper()
	path, err := exec.LookPath(tool)
	Expect(err).NotTo(HaveOccurred(), "%s is missing: install Debian's %s package (apt-get install %s)", tool, debianPackage, debianPackage)
	return path
}

// directives are the unit's values of a key, in order.
func directives(unit, key string) []string {
	var values []string
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(key)+`=(.*)$`).FindAllStringSubmatch(unit, -1) {
		values = append(values, m[1])
	}
	return values
}

// verify runs systemd-analyze verify on units (paths) and returns what it
// said. It exits 0 on an unknown key or a value it cannot parse, and only
// says so: anything it says is a finding.
func verify(units ...string) (string, error) {
	args := append([]string{"verify", "--man=no"}, units...)
	out, err := exec.Command(lookPath("systemd-analyze", "systemd"), args...).CombinedOutput()
	return string(out), err
}

// installable copies the unit file into dir with its ExecStart binary replaced
// by an executable stub in dir (verify checks that the binary exists and
// is executable; it is not installed here), and returns the copy's path.
func installable(dir, file, binary string) string {
	GinkgoHelper()
	raw, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	stub := filepath.Join(dir, binary)
	Expect(os.WriteFile(stub, []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	installed := "ExecStart=/usr/local/bin/" + binary + " "
	Expect(strings.Count(string(raw), installed)).To(Equal(1), "%s: one %q", file, installed)
	copied := filepath.Join(dir, filepath.Base(file))
	Expect(os.WriteFile(copied, []byte(strings.Replace(string(raw), installed, "ExecStart="+stub+" ", 1)), 0o644)).To(Succeed())
	return copied
}

var _ = Describe("the service units", func() {
	It("pass systemd-analyze verify without a word", func() {
		dir := GinkgoT().TempDir()
		var paths []string
		for _, u := range units {
			paths = append(paths, installable(dir, u.file, u.binary))
		}
		out, err := verify(paths...)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(BeEmpty())
	})

	It("would be caught by that check with a misspelt directive or a bad value", func() {
		dir := GinkgoT().TempDir()
		for bad, said := range map[string]string{"ProtectSystm=strict": "Unknown key 'ProtectSystm'", "ProtectSystem=bogus": "bogus"} {
			raw, err := os.ReadFile("corkboard-bbs.service")
			Expect(err).NotTo(HaveOccurred())
			file := filepath.Join(dir, "corkboard-bad.service")
			Expect(os.WriteFile(file, []byte(strings.Replace(string(raw), "ProtectSystem=strict", bad, 1)), 0o644)).To(Succeed())
			out, _ := verify(installable(dir, file, "bbs"))
			Expect(out).To(ContainSubstring(said), bad)
		}
	})

	It("run their example configs, whose data_dir is the unit's state directory", func() {
		for _, u := range units {
			raw, err := os.ReadFile(u.file)
			Expect(err).NotTo(HaveOccurred())
			unit := string(raw)
			Expect(directives(unit, "ExecStart")).To(Equal([]string{"/usr/local/bin/" + u.binary + " -config /etc/corkboard/" + u.binary + ".json"}), u.file)
			Expect(directives(unit, "ConfigurationDirectory")).To(Equal([]string{"corkboard"}), u.file)

			var cfg struct {
				DataDir string `json:"data_dir"`
			}
			configRaw, err := os.ReadFile(u.binary + ".json")
			Expect(err).NotTo(HaveOccurred())
			Expect(json.Unmarshal(configRaw, &cfg)).To(Succeed())
			Expect(directives(unit, "StateDirectory")).To(Equal([]string{strings.TrimPrefix(cfg.DataDir, "/var/lib/")}), u.file)
			Expect(cfg.DataDir).To(HavePrefix("/var/lib/"))
		}
	})

	It("run the board as the user corkboard.sysusers.conf makes", func() {
		raw, err := os.ReadFile("corkboard-bbs.service")
		Expect(err).NotTo(HaveOccurred())
		Expect(directives(string(raw), "User")).To(Equal([]string{"corkboard"}))
		Expect(directives(string(raw), "Group")).To(Equal([]string{"corkboard"}))

		conf, err := filepath.Abs("corkboard.sysusers.conf")
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.Command(lookPath("systemd-sysusers", "systemd"), "--dry-run", "--root="+GinkgoT().TempDir(), conf)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("Creating user 'corkboard'"))
		Expect(string(out)).NotTo(ContainSubstring(conf + ":"))
	})
})
