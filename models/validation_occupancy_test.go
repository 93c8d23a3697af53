package models_test

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Validation of occupancy reports", func() {
	change := func(index int32, occupied bool) *models.OccupancyChange {
		return &models.OccupancyChange{
			ProcessGuid: "web", Index: index, Presence: models.ActualLRP_ORDINARY, InstanceGuid: anInstance, Occupied: occupied,
		}
	}
	many := func(n int) []*models.OccupancyChange {
		changes := make([]*models.OccupancyChange, n)
		for i := range changes {
			changes[i] = change(int32(i), i%2 == 0)
		}
		return changes
	}

	DescribeTable("ReportOccupancyRequest",
		func(mutate func(*models.ReportOccupancyRequest), want string) {
			report := &models.ReportOccupancyRequest{CellId: aCell, Changes: []*models.OccupancyChange{change(0, true), change(1, false)}}
			mutate(report)
			expectValidation(report, want)
		},
		Entry("an occupied and a ready instance", func(*models.ReportOccupancyRequest) {}, ""),
		Entry("an evacuating instance and a validation instance", func(r *models.ReportOccupancyRequest) {
			r.Changes[0].Presence = models.ActualLRP_EVACUATING
			r.Changes[1].Index = models.ValidationIndex
		}, ""),
		Entry("the same row twice: the changes apply in order", func(r *models.ReportOccupancyRequest) {
			r.Changes = append(r.Changes, change(0, false))
		}, ""),
		Entry("1000 changes", func(r *models.ReportOccupancyRequest) { r.Changes = many(1000) }, ""),

		Entry("no cell", func(r *models.ReportOccupancyRequest) { r.CellId = "" }, "cell_id: required"),
		Entry("a bad cell", func(r *models.ReportOccupancyRequest) { r.CellId = "z1/cell" },
			`cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got "z1/cell"`),
		Entry("no changes", func(r *models.ReportOccupancyRequest) { r.Changes = nil }, "changes: required: at least one change"),
		Entry("1001 changes", func(r *models.ReportOccupancyRequest) { r.Changes = many(1001) },
			"changes: must hold at most 1000 changes, got 1001"),
		Entry("a nil change", func(r *models.ReportOccupancyRequest) { r.Changes[1] = nil }, "changes[1]: required"),
		Entry("a change without a process guid", func(r *models.ReportOccupancyRequest) {
			r.Changes = append(many(3), change(3, true))
			r.Changes[3].ProcessGuid = ""
		}, "changes[3].process_guid: required"),
		Entry("a change with a bad process guid", func(r *models.ReportOccupancyRequest) { r.Changes[0].ProcessGuid = "web app" },
			`changes[0].process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "web app"`),
		Entry("a change with a negative index", func(r *models.ReportOccupancyRequest) { r.Changes[1].Index = -1 },
			"changes[1].index: must be between 0 and 99999 (or 100000, a validation instance, or 100001 to 100010, baseline instances), got -1"),
		Entry("a change without a presence", func(r *models.ReportOccupancyRequest) { r.Changes[1].Presence = 0 },
			"changes[1].presence: required"),
		Entry("a change with an unknown presence", func(r *models.ReportOccupancyRequest) { r.Changes[0].Presence = 42 },
			"changes[0].presence: unknown presence 42"),
		Entry("a change without an instance guid", func(r *models.ReportOccupancyRequest) { r.Changes[1].InstanceGuid = "" },
			"changes[1].instance_guid: required"),
		Entry("a change with a bad instance guid", func(r *models.ReportOccupancyRequest) { r.Changes[0].InstanceGuid = "ig/1" },
			`changes[0].instance_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "ig/1"`),
	)
})
