package convergence_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("ReleaseLeases", func() {
	// row is an operation of LRP guid at modification index 4.
	row := func(id string, kind models.Operation_Kind, status models.Operation_Status, owner string, expires int64) convergence.OperationRow {
		return convergence.OperationRow{ID: id, ProcessGuid: "lrp-" + id, Kind: kind, Status: status,
			LeaseOwner: owner, LeaseExpiresAt: expires, ModificationIndex: 4}
	}
	released := func(id, board string) convergence.OperationWrite {
		return convergence.OperationWrite{ID: id, ProcessGuid: "lrp-" + id, ExpectModificationIndex: 4,
			ReleaseLease: true, History: []string{"released by board " + board + ": it stopped"}}
	}
	const (
		update   = models.Operation_UPDATE_DEFINITION
		validate = models.Operation_VALIDATE
		running  = models.Operation_IN_PROGRESS
		pending  = models.Operation_PENDING
	)

	It("releases b1's own leases and leaves the others (the worked example)", func() {
		ops := []convergence.OperationRow{
			row("a", update, running, "b1", 41),
			row("b", validate, running, "b0", 35),
			row("c", update, pending, "", 0),
		}
		Expect(convergence.ReleaseLeases(ops, "b1")).To(Equal([]convergence.OperationWrite{released("a", "b1")}))
	})

	DescribeTable("which operations a stopping board releases",
		func(ops []convergence.OperationRow, board string, want []convergence.OperationWrite) {
			Expect(convergence.ReleaseLeases(ops, board)).To(Equal(want))
		},
		Entry("none to release", nil, "b1", nil),
		Entry("a board with no name holds no leases", []convergence.OperationRow{row("a", update, running, "", 0)}, "", nil),
		Entry("its own lease, even expired: the next board takes it up either way",
			[]convergence.OperationRow{row("a", update, running, "b1", 1)}, "b1",
			[]convergence.OperationWrite{released("a", "b1")}),
		Entry("a validation it carries",
			[]convergence.OperationRow{row("v", validate, running, "b1", 41)}, "b1",
			[]convergence.OperationWrite{released("v", "b1")}),
		Entry("another board's lease is that board's to give up",
			[]convergence.OperationRow{row("a", update, running, "b2", 41)}, "b1", nil),
		Entry("a PENDING operation keeps no lease to give up",
			[]convergence.OperationRow{row("c", update, pending, "b1", 41)}, "b1", nil),
		Entry("several, in the rows' order",
			[]convergence.OperationRow{row("z", update, running, "b1", 41), row("b", update, running, "b2", 41), row("a", validate, running, "b1", 41)}, "b1",
			[]convergence.OperationWrite{released("z", "b1"), released("a", "b1")}),
	)
})
