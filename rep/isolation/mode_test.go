package isolation_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("modes", func() {
	DescribeTable("ParseMode",
		func(value string, want isolation.Mode, wantErr string) {
			mode, err := isolation.ParseMode(value)
			if wantErr != "" {
				Expect(err).To(MatchError(wantErr))
				return
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(mode).To(Equal(want))
		},
		Entry("empty is auto", "", isolation.Auto, ""),
		Entry("auto", "auto", isolation.Auto, ""),
		Entry("full", "full", isolation.Full, ""),
		Entry("none", "none", isolation.None, ""),
		Entry("capitals", "Full", isolation.Mode(""), `must be "auto", "full" or "none", got "Full"`),
		Entry("other", "partial", isolation.Mode(""), `must be "auto", "full" or "none", got "partial"`),
	)

	missing := errors.New("the rep runs as uid 1000, not root")
	DescribeTable("Resolve",
		func(configured isolation.Mode, unavailable error, want isolation.Mode, wantErr string, asks bool) {
			asked := false
			mode, err := isolation.Resolve(configured, func() error { asked = true; return unavailable })
			Expect(asked).To(Equal(asks))
			if wantErr != "" {
				Expect(err).To(MatchError(wantErr))
				return
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(mode).To(Equal(want))
		},
		Entry("auto where it can", isolation.Auto, nil, isolation.Full, "", true),
		Entry("auto where it cannot falls back", isolation.Auto, missing, isolation.None, "", true),
		Entry("empty is auto", isolation.Mode(""), missing, isolation.None, "", true),
		Entry("full where it can", isolation.Full, nil, isolation.Full, "", true),
		Entry("full where it cannot names what is missing", isolation.Full, missing, isolation.Mode(""),
			`isolation "full" is not possible here: the rep runs as uid 1000, not root`, true),
		Entry("none never asks", isolation.None, nil, isolation.None, "", false),
		Entry("unknown", isolation.Mode("some"), nil, isolation.Mode(""), `unknown isolation mode "some"`, false),
	)
})
