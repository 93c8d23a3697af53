package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("EventNamesLRP: which events are keyed by the LRP they are about", func() {
	lrp := &models.DesiredLRP{ProcessGuid: "web"}
	actual := onCell("cell-1")
	// One event of each type, as the board makes it.
	made := map[string]models.Event{
		models.EventDesiredLRPCreated:  models.DesiredLRPCreated(lrp),
		models.EventDesiredLRPChanged:  models.DesiredLRPChanged(lrp, lrp),
		models.EventDesiredLRPRemoved:  models.DesiredLRPRemoved(lrp),
		models.EventActualLRPCreated:   models.ActualLRPCreated(actual),
		models.EventActualLRPChanged:   models.ActualLRPChanged(actual, actual),
		models.EventActualLRPRemoved:   models.ActualLRPRemoved(actual),
		models.EventActualLRPCrashed:   models.ActualLRPCrashed(actual),
		models.EventCellChanged:        models.CellChanged(nil, &models.Cell{CellId: "cell-1"}),
		models.EventRolloutChanged:     models.RolloutChanged(&models.RolloutStatus{ProcessGuid: "web"}),
		models.EventOperationChanged:   models.OperationChanged(&models.Operation{ProcessGuid: "web"}),
		models.EventDefinitionHealth:   models.DefinitionHealthLogged("cell-1", &models.DefinitionHealth{ProcessGuid: "web"}),
		models.EventFreezeChanged:      models.FreezeChanged(nil, &models.FreezeWindow{Name: "holidays"}, "ops"),
		models.EventBudgetGroupChanged: models.BudgetGroupChanged(nil, &models.BudgetGroup{Name: "db"}, "ops"),
	}

	It("is true exactly for the types whose events are keyed by their LRP's process guid", func() {
		for eventType, e := range made {
			Expect(e.Type).To(Equal(eventType))
			Expect(models.EventNamesLRP(eventType)).To(Equal(e.Key == "web"), "%s keyed %q", eventType, e.Key)
		}
	})

	It("classifies every event type: an events_lost event opens a stream and names nothing", func() {
		for _, eventType := range models.EventTypes() {
			if eventType == models.EventEventsLost {
				Expect(models.EventNamesLRP(eventType)).To(BeFalse())
				continue
			}
			Expect(made).To(HaveKey(eventType), "a new event type: say here whether it is keyed by its LRP")
		}
	})
})
