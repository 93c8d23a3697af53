package configfile_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestConfigfile(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "configfile Suite")
}
