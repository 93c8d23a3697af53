package dialect_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDialect(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Dialect Suite")
}
