package e2e_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// chattySpec is one instance that writes 3 MiB of output, then idles.
const chattySpec = `{
  "process_guid": "chatty",
  "domain": "cork",
  "instances": 1,
  "definition": {
    "action": {"path": "sh", "args": ["-c", "yes 'forty bytes of chatter, line after line' | head -c 3145728; exec sleep 1000"]},
    "health_check": {"type": "PROCESS"},
    "memory_mb": 64,
    "disk_mb": 64
  }
}`

var _ = Describe("a rep with instance_log_limit_mb", func() {
	It("rotates an instance's log at that many MiB", func() {
		b := startBoard(nil)
		dataDir := GinkgoT().TempDir()
		// 1 MiB: 3 MiB of output rotates at least twice; at the default
		// 10 MiB it would not rotate at all.
		only := startRep(b, "cell-z1", "z1", map[string]any{"instance_log_limit_mb": 1, "data_dir": dataDir})
		specPath := filepath.Join(GinkgoT().TempDir(), "chatty.json")
		Expect(os.WriteFile(specPath, []byte(chattySpec), 0o600)).To(Succeed())
		b.cork("desire", specPath)

		Eventually(only.instances).Should(HaveLen(1))
		// The log is beside the instance's directory, out of its reach.
		log := filepath.Join(dataDir, "instances", "."+only.instances()[0].InstanceGuid+".log")
		Eventually(log + ".1").Should(BeAnExistingFile())
		// Both logs, seen at one moment: a rotation renames the log
		// before it opens the next one, so one look may miss it.
		sizes := func() (map[string]int64, error) {
			seen := map[string]int64{}
			for _, name := range []string{log, log + ".1"} {
				info, err := os.Stat(name)
				if err != nil {
					return nil, err
				}
				seen[name] = info.Size()
			}
			return seen, nil
		}
		var seen map[string]int64
		Eventually(func() (err error) {
			seen, err = sizes()
			return err
		}).Should(Succeed())
		for name, size := range seen {
			Expect(size).To(BeNumerically("<=", 1<<20), name)
		}
	})
})
