package systemd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The rep's CapabilityBoundingSet is checked by running the executor's
// isolation specs (rep/executor/executor_isolation_test.go: an instance
// isolated, as a uid of its own, its processes bounded and ended) with no
// other capabilities, as the unit would leave the rep: setpriv
// --bounding-set limits a root process's capabilities to the set, as
// systemd does. Without one of them, isolation fails (CAP_SYS_ADMIN is
// dropped below to show it).
var _ = Describe("the rep unit's capability bounding set", Ordered, func() {
	var setpriv, testBinary string
	var bounding []string

	BeforeAll(func() {
		Expect(os.Geteuid()).To(Equal(0), "isolating instances needs root, as CI runs")
		setpriv = lookPath("setpriv", "util-linux")
		raw, err := os.ReadFile("corkboard-rep.service")
		Expect(err).NotTo(HaveOccurred())
		sets := directives(string(raw), "CapabilityBoundingSet")
		Expect(sets).To(HaveLen(1))
		for _, capability := range strings.Fields(sets[0]) {
			Expect(capability).To(HavePrefix("CAP_"))
			bounding = append(bounding, strings.ToLower(strings.TrimPrefix(capability, "CAP_")))
		}
		Expect(bounding).To(ContainElement("sys_admin"))

		goTool, err := exec.LookPath("go")
		Expect(err).NotTo(HaveOccurred())
		testBinary = filepath.Join(GinkgoT().TempDir(), "executor.test")
		build := exec.Command(goTool, "test", "-c", "-o", testBinary, "../../rep/executor/")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	// runIsolationSpecs runs the executor's specs that focus matches with
	// only caps in the bounding set and returns whether they passed, and
	// the output.
	runIsolationSpecs := func(caps []string, focus string) (bool, string) {
		set := "-all"
		for _, c := range caps {
			set += ",+" + c
		}
		cmd := exec.Command(setpriv, "--bounding-set="+set, "--inh-caps=-all", "--",
			testBinary, "-ginkgo.focus="+focus, "-ginkgo.no-color")
		cmd.Dir = "../../rep/executor"
		out, err := cmd.CombinedOutput()
		return err == nil, string(out)
	}

	It("lets the rep isolate instances", func() {
		passed, out := runIsolationSpecs(bounding, "Executor isolation")
		Expect(passed).To(BeTrue(), out)
		ran := regexp.MustCompile(`Ran (\d+) of \d+ Specs`).FindStringSubmatch(out)
		Expect(ran).NotTo(BeNil(), out)
		Expect(ran[1]).NotTo(Equal("0"))
		// Every spec that ran passed: none skipped for want of root.
		Expect(out).To(MatchRegexp(`SUCCESS! -- ` + ran[1] + ` Passed \| 0 Failed`))
	})

	It("is needed: without CAP_SYS_ADMIN isolation fails", func() {
		var fewer []string
		for _, c := range bounding {
			if c != "sys_admin" {
				fewer = append(fewer, c)
			}
		}
		passed, out := runIsolationSpecs(fewer, "Executor isolation is full as root by default")
		Expect(passed).To(BeFalse(), out)
		Expect(out).To(ContainSubstring("Ran 1 of"))
	})
})
