// Package systemd_test checks the service units of deploy/systemd: that
// systemd accepts them, that they agree with the example configs beside
// them, and that the rep's capability bounding set still lets it isolate
// instances.
package systemd_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSystemd(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "deploy/systemd Suite")
}
