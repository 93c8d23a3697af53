package recent_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestRecent(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Recent Suite")
}
