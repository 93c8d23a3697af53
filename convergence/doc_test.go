package convergence_test

import (
	"os"
	"reflect"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

// doc.go promises to say what every write group does, in the order
// ApplyConvergence performs them (the order of ConvergenceWrites' fields);
// a group added without a line there, or a line out of order, fails here.
var _ = Describe("The package documentation", func() {
	It("names every write group of ConvergenceWrites in its list of what each write does", func() {
		src, err := os.ReadFile("doc.go")
		Expect(err).NotTo(HaveOccurred())
		doc := string(src)
		start := strings.Index(doc, "What the planner expects each write to do")
		end := strings.Index(doc, "# Partial snapshots")
		Expect(start).To(BeNumerically(">", 0))
		Expect(end).To(BeNumerically(">", start))
		list := doc[start:end]

		writes := reflect.TypeOf(convergence.ConvergenceWrites{})
		groups, last := 0, -1
		for i := 0; i < writes.NumField(); i++ {
			field := writes.Field(i)
			if field.Type.Kind() != reflect.Slice {
				continue // PlacementEpoch is a guard, not a group
			}
			groups++
			at := strings.Index(list, "//   - "+field.Name+" ")
			Expect(at).NotTo(Equal(-1), "doc.go says nothing of %s", field.Name)
			Expect(at).To(BeNumerically(">", last), "doc.go has %s out of the order the groups are applied in", field.Name)
			last = at
		}
		Expect(groups).To(Equal(15))
	})
})
