package configref_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestConfigref(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "configref Suite")
}
