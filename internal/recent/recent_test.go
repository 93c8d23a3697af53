package recent_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/recent"
)

var _ = Describe("Map", func() {
	type key struct {
		id       uint64
		protobuf bool
	}

	It("keeps the last n keys' values, the same value for every reader", func() {
		m := recent.New[key, string](256)
		for id := uint64(1); id <= 256+44; id++ {
			m.Put(key{id, false}, fmt.Sprintf("json %d", id))
		}
		m.Put(key{300, true}, "base64 300")
		get := func(k key) string {
			v, _ := m.Get(k)
			return v
		}
		Expect(get(key{1, false})).To(BeEmpty(), "the oldest went first")
		Expect(get(key{44, false})).To(BeEmpty())
		Expect(get(key{45, false})).To(BeEmpty(), "made room for the protobuf one")
		Expect(get(key{46, false})).To(Equal("json 46"))
		Expect(get(key{300, false})).To(Equal("json 300"))
		Expect(get(key{300, true})).To(Equal("base64 300"))
		Expect(m.Len()).To(Equal(256))

		m.Put(key{200, false}, "encoded again")
		Expect(get(key{200, false})).To(Equal("json 200"), "what a reader was given is never replaced")
	})

	It("keeps the zero key like any other", func() {
		m := recent.New[uint64, string](2)
		m.Put(0, "zero")
		m.Put(1, "one")
		v, ok := m.Get(0)
		Expect(ok).To(BeTrue())
		Expect(v).To(Equal("zero"))
		m.Put(2, "two")
		_, ok = m.Get(0)
		Expect(ok).To(BeFalse())
	})
})
