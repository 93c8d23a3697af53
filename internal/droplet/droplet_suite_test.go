package droplet_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/droplet"
)

func TestDroplet(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "droplet Suite")
}

// moduleRoot is the module's root, from this package's folder.
var moduleRoot = filepath.Join("..", "..")

// v2 is hello's droplet at v2, built once for the suite.
var v2 []byte

var _ = BeforeSuite(func() {
	// A cold build cache compiles the standard library for CGO_ENABLED=0
	// first; that is slow, not wrong.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	v2, err = droplet.Build(ctx, moduleRoot, "v2")
	Expect(err).NotTo(HaveOccurred())
})
