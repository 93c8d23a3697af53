package main

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("withPresence", func() {
	// Index 0 mid-rollout: its own instance and the RETIRING one it
	// replaces; index 1 mid-move.
	lrps := []*models.ActualLRP{
		{ProcessGuid: "hello", Index: 0, Presence: models.ActualLRP_ORDINARY},
		{ProcessGuid: "hello", Index: 0, Presence: models.ActualLRP_RETIRING},
		{ProcessGuid: "hello", Index: 1, Presence: models.ActualLRP_EVACUATING},
		{ProcessGuid: "hello", Index: 1, Presence: models.ActualLRP_ORDINARY},
	}

	It("keeps each index's own instance with ORDINARY, in any case", func() {
		kept, err := withPresence(lrps, "ordinary")
		Expect(err).NotTo(HaveOccurred())
		Expect(kept).To(Equal([]*models.ActualLRP{lrps[0], lrps[3]}))
		kept, err = withPresence(lrps, "RETIRING")
		Expect(err).NotTo(HaveOccurred())
		Expect(kept).To(Equal([]*models.ActualLRP{lrps[1]}))
	})

	It("keeps every instance without a presence, and refuses an unknown one naming the flag", func() {
		kept, err := withPresence(lrps, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(kept).To(HaveLen(4))
		_, err = withPresence(lrps, "gone")
		Expect(err).To(MatchError(`--presence must be ORDINARY, RETIRING, EVACUATING or SUSPECT, got "gone"`))
	})
})
