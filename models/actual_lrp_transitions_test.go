package models_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

const (
	UNCLAIMED = models.ActualLRP_UNCLAIMED
	CLAIMED   = models.ActualLRP_CLAIMED
	RUNNING   = models.ActualLRP_RUNNING
	CRASHED   = models.ActualLRP_CRASHED
)

// Who asks for a transition.
type actor struct{ name, instanceGuid, cellID string }

var (
	board            = actor{"the board", "", ""}
	owner            = actor{"its own instance", "ig-1", "cell-1"}
	otherCell        = actor{"another instance", "ig-2", "cell-2"}
	ownerOnOtherCell = actor{"its instance guid on another cell", "ig-1", "cell-2"}
)

func describeTransition(from, to models.ActualLRP_State, who actor, want models.Error_Type) string {
	outcome := "allowed"
	if want != allowed {
		outcome = want.String()
	}
	return fmt.Sprintf("%s -> %s by %s: %s", from, to, who.name, outcome)
}

// actualLRPIn is the stored row: unclaimed rows have no instance, every
// other row belongs to owner.
func actualLRPIn(state models.ActualLRP_State) *models.ActualLRP {
	lrp := &models.ActualLRP{
		ProcessGuid:  "web",
		Index:        2,
		Presence:     models.ActualLRP_ORDINARY,
		DefinitionId: "v1",
		State:        state,
	}
	if state != UNCLAIMED {
		lrp.InstanceGuid = owner.instanceGuid
		lrp.CellId = owner.cellID
	}
	return lrp
}

const allowed = models.Error_Type(-1)

var _ = Describe("ActualLRP state transitions", func() {
	DescribeTable("CheckTransition",
		func(from, to models.ActualLRP_State, who actor, want models.Error_Type) {
			current := actualLRPIn(from)
			before := proto.Clone(current)
			err := models.CheckTransition(current, to, who.instanceGuid, who.cellID)
			Expect(proto.Equal(before, current)).To(BeTrue(), "CheckTransition changed the row")
			if want == allowed {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(HaveOccurred())
			Expect(models.ConvertError(err).GetType()).To(Equal(want), "got %v", err)
		},
		describeTransition,
		// From UNCLAIMED: any cell may claim or start it; nothing can crash.
		Entry(nil, UNCLAIMED, UNCLAIMED, board, allowed),
		Entry(nil, UNCLAIMED, UNCLAIMED, otherCell, allowed),
		Entry(nil, UNCLAIMED, CLAIMED, owner, allowed),
		Entry(nil, UNCLAIMED, CLAIMED, otherCell, allowed),
		Entry(nil, UNCLAIMED, CLAIMED, board, models.Error_InvalidRequest),
		Entry(nil, UNCLAIMED, RUNNING, otherCell, allowed),
		Entry(nil, UNCLAIMED, RUNNING, board, models.Error_InvalidRequest),
		Entry(nil, UNCLAIMED, CRASHED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, UNCLAIMED, CRASHED, board, models.Error_InvalidRequest),

		// From CLAIMED: only its own instance moves it on; the board unclaims.
		Entry(nil, CLAIMED, UNCLAIMED, board, allowed),
		Entry(nil, CLAIMED, UNCLAIMED, owner, allowed),
		Entry(nil, CLAIMED, UNCLAIMED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, CLAIMED, CLAIMED, owner, allowed),
		Entry(nil, CLAIMED, CLAIMED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, CLAIMED, CLAIMED, ownerOnOtherCell, models.Error_InvalidStateTransition),
		Entry(nil, CLAIMED, CLAIMED, board, models.Error_InvalidRequest),
		Entry(nil, CLAIMED, RUNNING, owner, allowed),
		Entry(nil, CLAIMED, RUNNING, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, CLAIMED, RUNNING, ownerOnOtherCell, models.Error_InvalidStateTransition),
		Entry(nil, CLAIMED, CRASHED, owner, allowed),
		Entry(nil, CLAIMED, CRASHED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, CLAIMED, CRASHED, board, models.Error_InvalidRequest),

		// From RUNNING: the same.
		Entry(nil, RUNNING, UNCLAIMED, board, allowed),
		Entry(nil, RUNNING, UNCLAIMED, owner, allowed),
		Entry(nil, RUNNING, UNCLAIMED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, RUNNING, UNCLAIMED, ownerOnOtherCell, models.Error_InvalidStateTransition),
		Entry(nil, RUNNING, CLAIMED, owner, allowed),
		Entry(nil, RUNNING, CLAIMED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, RUNNING, RUNNING, owner, allowed),
		Entry(nil, RUNNING, RUNNING, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, RUNNING, RUNNING, ownerOnOtherCell, models.Error_InvalidStateTransition),
		Entry(nil, RUNNING, RUNNING, board, models.Error_InvalidRequest),
		Entry(nil, RUNNING, CRASHED, owner, allowed),
		Entry(nil, RUNNING, CRASHED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, RUNNING, CRASHED, ownerOnOtherCell, models.Error_InvalidStateTransition),

		// From CRASHED: only back to UNCLAIMED, to be placed again.
		Entry(nil, CRASHED, UNCLAIMED, board, allowed),
		Entry(nil, CRASHED, UNCLAIMED, owner, allowed),
		Entry(nil, CRASHED, UNCLAIMED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, CRASHED, CLAIMED, owner, models.Error_InvalidStateTransition),
		Entry(nil, CRASHED, CLAIMED, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, CRASHED, RUNNING, owner, models.Error_InvalidStateTransition),
		Entry(nil, CRASHED, RUNNING, otherCell, models.Error_InvalidStateTransition),
		Entry(nil, CRASHED, UNCLAIMED, ownerOnOtherCell, models.Error_InvalidStateTransition),
		Entry(nil, CRASHED, CLAIMED, board, models.Error_InvalidRequest),
		Entry(nil, CRASHED, CRASHED, owner, models.Error_InvalidStateTransition),
		Entry(nil, CRASHED, CRASHED, otherCell, models.Error_InvalidStateTransition),

		// Asking for no state at all is a malformed request, whoever asks.
		Entry(nil, RUNNING, models.ActualLRP_STATE_UNKNOWN, owner, models.Error_InvalidRequest),
		Entry(nil, UNCLAIMED, models.ActualLRP_State(99), board, models.Error_InvalidRequest),
		// A row in no known state allows nothing.
		Entry(nil, models.ActualLRP_STATE_UNKNOWN, UNCLAIMED, board, models.Error_InvalidStateTransition),
		Entry(nil, models.ActualLRP_STATE_UNKNOWN, CLAIMED, owner, models.Error_InvalidStateTransition),
	)

	It("names both instances when one takes over another's row", func() {
		err := models.CheckTransition(actualLRPIn(RUNNING), RUNNING, "ig-2", "cell-2")
		Expect(err).To(MatchError(`InvalidStateTransition: cannot move actual LRP web/2 from RUNNING to RUNNING: ` +
			`it belongs to instance "ig-1" on cell "cell-1", not instance "ig-2" on cell "cell-2"`))
	})

	It("says why a crashed row cannot be claimed where it crashed", func() {
		err := models.CheckTransition(actualLRPIn(CRASHED), CLAIMED, "ig-1", "cell-1")
		Expect(err).To(MatchError("InvalidStateTransition: cannot move actual LRP web/2 from CRASHED to CLAIMED: " +
			"a crashed instance restarts by being unclaimed and placed again"))
	})

	It("names the missing field when a claim does not say who claims", func() {
		err := models.CheckTransition(actualLRPIn(UNCLAIMED), CLAIMED, "ig-1", "")
		Expect(err).To(MatchError("InvalidRequest: cell_id: required to move an actual LRP to CLAIMED"))
		err = models.CheckTransition(actualLRPIn(UNCLAIMED), CLAIMED, "", "cell-1")
		Expect(err).To(MatchError("InvalidRequest: instance_guid: required to move an actual LRP to CLAIMED"))
	})

	It("refuses to move a row that does not exist", func() {
		err := models.CheckTransition(nil, CLAIMED, "ig-1", "cell-1")
		Expect(models.IsErrorType(err, models.Error_InvalidStateTransition)).To(BeTrue())
		Expect(err).To(MatchError("InvalidStateTransition: cannot move a missing actual LRP to CLAIMED"))
	})

	It("does not let an instance guid alone, without its cell, claim ownership", func() {
		// A row with an instance guid but no cell is corrupt; nobody owns it.
		corrupt := &models.ActualLRP{ProcessGuid: "web", State: RUNNING, InstanceGuid: "ig-1"}
		Expect(models.CheckTransition(corrupt, RUNNING, "ig-1", "cell-1")).To(HaveOccurred())
	})

	DescribeTable("BelongsTo",
		func(row *models.ActualLRP, who actor, want bool) {
			Expect(row.BelongsTo(who.instanceGuid, who.cellID)).To(Equal(want))
		},
		Entry("its own instance", actualLRPIn(RUNNING), owner, true),
		Entry("another instance", actualLRPIn(RUNNING), otherCell, false),
		Entry("its instance guid on another cell", actualLRPIn(RUNNING), ownerOnOtherCell, false),
		Entry("an unclaimed row belongs to nobody, not even the board", actualLRPIn(UNCLAIMED), board, false),
		Entry("a nil row belongs to nobody", (*models.ActualLRP)(nil), board, false),
	)

	DescribeTable("ActualLRP_State.IsValid",
		func(state models.ActualLRP_State, want bool) {
			Expect(state.IsValid()).To(Equal(want))
		},
		Entry(nil, UNCLAIMED, true),
		Entry(nil, CLAIMED, true),
		Entry(nil, RUNNING, true),
		Entry(nil, CRASHED, true),
		Entry(nil, models.ActualLRP_STATE_UNKNOWN, false),
		Entry(nil, models.ActualLRP_State(5), false),
		Entry(nil, models.ActualLRP_State(-1), false),
	)

	DescribeTable("ActualLRP_Presence.IsValid",
		func(presence models.ActualLRP_Presence, want bool) {
			Expect(presence.IsValid()).To(Equal(want))
		},
		Entry(nil, models.ActualLRP_ORDINARY, true),
		Entry(nil, models.ActualLRP_EVACUATING, true),
		Entry(nil, models.ActualLRP_SUSPECT, true),
		Entry(nil, models.ActualLRP_RETIRING, true),
		Entry(nil, models.ActualLRP_PRESENCE_UNKNOWN, false),
		Entry(nil, models.ActualLRP_Presence(5), false),
	)
})

var _ = DescribeTable("CheckInstanceCell",
	func(row *models.ActualLRP, instanceGuid, cellID, want string) {
		err := models.CheckInstanceCell(row, "evacuate", instanceGuid, cellID)
		if want == "" {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).To(HaveOccurred())
		Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_InvalidStateTransition))
		Expect(models.ConvertError(err).GetMessage()).To(Equal(want))
	},
	Entry("no row", nil, "ig-1", "cell-a", ""),
	Entry("the caller's instance on its cell", &models.ActualLRP{ProcessGuid: "web", InstanceGuid: "ig-1", CellId: "cell-a"}, "ig-1", "cell-a", ""),
	Entry("another instance on another cell: stale, not refused here", &models.ActualLRP{ProcessGuid: "web", InstanceGuid: "ig-2", CellId: "cell-b"}, "ig-1", "cell-a", ""),
	Entry("a row with no instance", &models.ActualLRP{ProcessGuid: "web", CellId: "cell-b"}, "", "cell-a", ""),
	Entry("the named instance on another cell",
		&models.ActualLRP{ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-1", CellId: "cell-b"}, "ig-1", "cell-a",
		`cannot evacuate actual LRP web/2 (ORDINARY): instance "ig-1" runs on cell "cell-b", not on cell "cell-a"`),
)
