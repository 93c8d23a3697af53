package testdb_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The Ginkgo specs of this package (the Galera cluster's and the Patroni
// pair's, the latter in package testdb); its other tests are plain Go
// tests, run by go test beside this one.
func TestTestdbSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "testdb Suite")
}
