package hack_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("make help", func() {
	It("lists every target of the Makefile once, each with its one line", func() {
		makefile, err := os.ReadFile("../Makefile")
		Expect(err).NotTo(HaveOccurred())
		// Every rule's target: a name at the start of a line, then a colon
		// (.PHONY and variable assignments such as "BIN :=" do not match).
		targets := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z-]*):([^=]|$)`).FindAllStringSubmatch(string(makefile), -1) {
			targets[m[1]] = true
		}
		Expect(targets).To(HaveKey("run"))
		Expect(targets).To(HaveKey("test"))

		cmd := exec.Command("make", "-s", "--no-print-directory", "help")
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		listed := map[string]int{}
		line := regexp.MustCompile(`^  ([a-z][a-z-]*) +(\S.*)$`)
		for _, l := range strings.Split(string(out), "\n") {
			if m := line.FindStringSubmatch(l); m != nil {
				listed[m[1]]++
			}
		}
		for target := range targets {
			Expect(listed).To(HaveKeyWithValue(target, 1), "make help lists %q once (its line in the Makefile ends in \"## \" and a description)", target)
		}
		Expect(listed).To(HaveLen(len(targets)), "make help lists only targets:\n%s", out)
	})
})
