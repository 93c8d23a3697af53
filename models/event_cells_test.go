package models_test

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = DescribeTable("Event.ConcernsCell: what a cell's scoped stream carries",
	func(e models.Event, concernsCell1 bool) {
		Expect(e.ConcernsCell("cell-1")).To(Equal(concernsCell1))
	},
	Entry("a row created on the cell", models.ActualLRPCreated(onCell("cell-1")), true),
	Entry("a row created elsewhere", models.ActualLRPCreated(onCell("cell-2")), false),
	Entry("a row created on no cell", models.ActualLRPCreated(onCell("")), false),
	Entry("a row placed on the cell", models.ActualLRPChanged(onCell(""), onCell("cell-1")), true),
	Entry("a row leaving the cell", models.ActualLRPChanged(onCell("cell-1"), onCell("cell-2")), true),
	Entry("a row changing elsewhere", models.ActualLRPChanged(onCell("cell-2"), onCell("cell-2")), false),
	Entry("a row removed from the cell", models.ActualLRPRemoved(onCell("cell-1")), true),
	Entry("a row removed elsewhere", models.ActualLRPRemoved(onCell("cell-2")), false),
	Entry("a crash on the cell", models.ActualLRPCrashed(onCell("cell-1")), true),
	Entry("a crash elsewhere", models.ActualLRPCrashed(onCell("cell-2")), false),
	Entry("the cell changing", models.CellChanged(nil, &models.Cell{CellId: "cell-1"}), true),
	Entry("another cell changing", models.CellChanged(nil, &models.Cell{CellId: "cell-2"}), false),
	Entry("a desired LRP", models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "web"}), false),
	Entry("a rollout", models.RolloutChanged(&models.RolloutStatus{ProcessGuid: "web"}), false),
	Entry("events_lost", models.Event{Type: models.EventEventsLost, Payload: &models.EventsLostEvent{LastEventId: 3}}, true),
)

func onCell(cellID string) *models.ActualLRP {
	return &models.ActualLRP{ProcessGuid: "web", Index: 0, CellId: cellID}
}

var _ = Describe("EventTypeConcernsCells", func() {
	It("names exactly the types whose events can concern a cell, for every event type", func() {
		for _, eventType := range models.EventTypes() {
			payload := models.NewEventPayload(eventType)
			setCellIDs(payload.ProtoReflect(), "cell-1")
			e := models.Event{Type: eventType, Payload: payload}
			Expect(e.ConcernsCell("cell-1")).To(Equal(models.EventTypeConcernsCells(eventType)), eventType)
		}
	})

	It("concerns no cell through an empty cell id", func() {
		Expect(models.ActualLRPCreated(onCell("")).Cells().Has("")).To(BeFalse())
		Expect(models.ActualLRPChanged(onCell(""), onCell("cell-1")).Cells().Has("")).To(BeFalse())
	})
})

// setCellIDs sets every string field named cell_id of m and of the
// messages under it, creating them, to cellID.
func setCellIDs(m protoreflect.Message, cellID string) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		switch {
		case f.Name() == "cell_id" && f.Kind() == protoreflect.StringKind && !f.IsList() && !f.IsMap():
			m.Set(f, protoreflect.ValueOfString(cellID))
		case f.Kind() == protoreflect.MessageKind && !f.IsList() && !f.IsMap() && f.ContainingOneof() == nil:
			if f.Message().FullName().Parent() == "google.protobuf" {
				continue
			}
			setCellIDs(m.Mutable(f).Message(), cellID)
		}
	}
}
