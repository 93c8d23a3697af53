package main

import (
	"os/exec"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("help", func() {
	// scenarioLines are the lines of a help text that list a scenario:
	// two spaces, the name, two or more spaces, the summary.
	scenarioLines := func(out string) map[string]string {
		lines := map[string]string{}
		re := regexp.MustCompile(`^  ([a-z]+) {2,}(\S.*)$`)
		for _, line := range strings.Split(out, "\n") {
			if m := re.FindStringSubmatch(line); m != nil {
				lines[m[1]] = m[2]
			}
		}
		return lines
	}
	want := func() map[string]string {
		lines := map[string]string{}
		for _, s := range scenarios {
			lines[s.name] = s.summary
		}
		return lines
	}

	for _, arg := range []string{"help", "-h", "--help"} {
		It("bbs-load "+arg+" lists every scenario with its one line, and exits 0", func() {
			session, err := gexec.Start(exec.Command(bbsLoadPath, arg), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(session, 10*time.Second).Should(gexec.Exit(0))
			Expect(scenarioLines(string(session.Out.Contents()))).To(Equal(want()))
		})
	}

	It("names every scenario in the table with a summary", func() {
		for _, s := range scenarios {
			Expect(s.summary).NotTo(BeEmpty(), s.name)
			Expect(s.summary).NotTo(ContainSubstring("\n"), s.name)
		}
	})

	It("an unknown scenario exits 2 and lists the scenarios on stderr", func() {
		session, err := gexec.Start(exec.Command(bbsLoadPath, "nosuch"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session, 10*time.Second).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring(`unknown scenario "nosuch"`))
		Expect(scenarioLines(string(session.Err.Contents()))).To(Equal(want()))
	})

	It("a scenario's -h still shows that scenario's flags", func() {
		session, err := gexec.Start(exec.Command(bbsLoadPath, "converge", "-h"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session, 10*time.Second).Should(gexec.Exit())
		Expect(string(session.Err.Contents())).To(ContainSubstring("-lrps"))
	})
})
