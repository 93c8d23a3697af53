package handlers

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("encodedEvents", func() {
	It("keeps the last sharedEncodings events' data by id and encoding, the same bytes for every stream", func() {
		c := newEncodedEvents()
		for id := uint64(1); id <= sharedEncodings+44; id++ {
			c.put(id, false, []byte(fmt.Sprintf("json %d", id)))
		}
		c.put(300, true, []byte("base64 300"))
		Expect(c.get(1, false)).To(BeNil(), "the oldest went first")
		Expect(c.get(44, false)).To(BeNil())
		Expect(c.get(45, false)).To(BeNil(), "made room for the protobuf one")
		Expect(c.get(46, false)).To(Equal([]byte("json 46")))
		Expect(c.get(300, false)).To(Equal([]byte("json 300")))
		Expect(c.get(300, true)).To(Equal([]byte("base64 300")))
		Expect(c.byID).To(HaveLen(sharedEncodings))

		c.put(200, false, []byte("encoded again"))
		Expect(c.get(200, false)).To(Equal([]byte("json 200")), "what a stream was given is never replaced")
	})
})
