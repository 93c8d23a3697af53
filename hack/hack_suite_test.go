// Package hack_test holds the specs of what the Makefile and the scripts
// in hack/ promise a person at a terminal (make help; make run's notices).
package hack_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestHack(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "hack Suite")
}
