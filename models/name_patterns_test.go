package models_test

import (
	"math/rand/v2"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// The validators of names accept by a byte-by-byte check and use their
// patterns only to explain a refusal: the two must agree on every name.
var _ = Describe("Names checked byte by byte", func() {
	// The patterns as the refusals state them.
	processGuid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
	definitionID := regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`)

	// names are random strings over the characters at the patterns' edges,
	// of the lengths at their bounds and between; seeded.
	names := func(n int) []string {
		r := rand.New(rand.NewPCG(28, 2))
		alphabet := []string{"a", "Z", "0", "9", "_", "-", ".", " ", "/", "~", "`", "@", "[", "{", ":", "é", "\n", "\x00", "\xff"}
		lengths := []int{0, 1, 2, 63, 64, 65, 127, 128, 129}
		out := make([]string, 0, n)
		for range n {
			length := lengths[r.IntN(len(lengths))]
			if r.IntN(2) == 0 {
				length = r.IntN(130)
			}
			// A quarter from the characters a process guid takes, a quarter
			// from those a definition id takes (those and the dot), a quarter
			// of the latter with one other character somewhere, a quarter
			// from every character above.
			kind, odd := r.IntN(4), r.IntN(max(length, 1))
			var b strings.Builder
			for i := range length {
				switch {
				case kind == 0:
					b.WriteString(alphabet[r.IntN(6)])
				case kind == 3, kind == 2 && i == odd:
					b.WriteString(alphabet[r.IntN(len(alphabet))])
				default:
					b.WriteString(alphabet[r.IntN(7)])
				}
			}
			out = append(out, b.String())
		}
		return out
	}

	DescribeTable("accept a name exactly when its pattern matches",
		func(validate func(string) error, pattern *regexp.Regexp) {
			accepted := 0
			for _, name := range names(20000) {
				err := validate(name)
				Expect(err == nil).To(Equal(pattern.MatchString(name)), "%q: %v", name, err)
				if err == nil {
					accepted++
				}
			}
			Expect(accepted).To(BeNumerically(">", 1000))
		},
		Entry("a process guid", models.ValidateProcessGuid, processGuid),
		Entry("a definition id", models.ValidateUpdateIdentifier, definitionID),
	)
})
