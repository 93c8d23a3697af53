package main_test

import (
	"bytes"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// cork shows strategies with models' own rules (strategy.go): it links
// neither the convergence runner, with its lease, database feed and
// Prometheus metrics, nor anything of Prometheus.
var _ = Describe("What cork links", func() {
	It("is neither the convergence runner nor Prometheus", func() {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("go", "list", "-deps", "github.com/corkboard/corkboard/cmd/cork")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		Expect(cmd.Run()).To(Succeed(), "go list: %s", stderr.String())
		linked := strings.Fields(stdout.String())
		Expect(linked).To(ContainElement("github.com/corkboard/corkboard/models"),
			"the list is cork's dependencies, models among them")
		for _, path := range linked {
			Expect(path).NotTo(HavePrefix("github.com/corkboard/corkboard/convergence/runner"))
			Expect(path).NotTo(HavePrefix("github.com/prometheus/"))
		}
	})
})
