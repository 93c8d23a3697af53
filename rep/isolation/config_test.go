package isolation_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("Config.WithDefaults", func() {
	It("gives each zero field its default", func() {
		Expect(isolation.Config{DataDir: "/d"}.WithDefaults()).To(Equal(isolation.Config{
			Mode:         isolation.Auto,
			UIDs:         isolation.UIDRange{First: isolation.DefaultUIDFirst, Count: isolation.DefaultUIDCount},
			UIDClaimDir:  isolation.DefaultUIDClaimDir,
			DataDir:      "/d",
			MaxProcesses: isolation.DefaultMaxProcesses,
			MaxOpenFiles: isolation.DefaultMaxOpenFiles,
		}))
	})

	It("keeps what is set", func() {
		set := isolation.Config{
			Mode:         isolation.None,
			UIDs:         isolation.UIDRange{First: 300000, Count: 10},
			UIDClaimDir:  "/var/run/claims",
			MaxProcesses: 7,
			MaxOpenFiles: 8,
		}
		Expect(set.WithDefaults()).To(Equal(set))
	})
})
