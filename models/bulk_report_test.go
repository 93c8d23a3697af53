package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("ReconcileReport", func() {
	const now = int64(5_000)
	net := &models.NetInfo{Address: "10.0.0.7", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61007}}}

	// row is web/<index> <presence> in state on cell, owned by instance
	// (none for ""), on v1, at tag index 2, since 100.
	row := func(index int32, presence models.ActualLRP_Presence, state models.ActualLRP_State, instance, cell string, edit ...func(*models.ActualLRP)) *models.ActualLRP {
		lrp := &models.ActualLRP{
			ProcessGuid: "web", Index: index, Presence: presence, State: state, InstanceGuid: instance, CellId: cell,
			DefinitionId: "v1", Since: 100, ModificationTag: &models.ModificationTag{Epoch: "e", Index: 2},
		}
		for _, e := range edit {
			e(lrp)
		}
		return lrp
	}
	// reported is web/<index> <presence> run by instance on v1, in state,
	// with net and routable.
	reported := func(index int32, presence models.ActualLRP_Presence, state models.ActualLRP_State, instance string, edit ...func(*models.ReportedInstance)) *models.ReportedInstance {
		r := &models.ReportedInstance{
			ProcessGuid: "web", Index: index, Presence: presence, InstanceGuid: instance, DefinitionId: "v1",
			State: state, NetInfo: net, Routable: state == models.ActualLRP_RUNNING,
		}
		for _, e := range edit {
			e(r)
		}
		return r
	}
	const (
		ORDINARY   = models.ActualLRP_ORDINARY
		EVACUATING = models.ActualLRP_EVACUATING
		SUSPECT    = models.ActualLRP_SUSPECT
		RETIRING   = models.ActualLRP_RETIRING
	)
	// inLine is the row brought in line with a RUNNING report by instance.
	inLine := func(before *models.ActualLRP, instance string, edit ...func(*models.ActualLRP)) models.RowChange {
		after := proto.Clone(before).(*models.ActualLRP)
		after.ModificationTag.Index++
		if after.State != models.ActualLRP_RUNNING {
			after.Since = now
		}
		after.State, after.InstanceGuid, after.NetInfo, after.Routable, after.PlacementError = models.ActualLRP_RUNNING, instance, net, true, ""
		for _, e := range edit {
			e(after)
		}
		return models.RowChange{Before: before, After: after}
	}
	type want struct {
		writes    []models.RowChange
		stop      []*models.ReportedInstance
		assigned  []*models.ActualLRP
		occupancy []string
	}

	DescribeTable("matches each reported instance with its row",
		func(rows []*models.ActualLRP, report []*models.ReportedInstance, w want) {
			kept := make([]*models.ActualLRP, len(rows))
			for i, r := range rows {
				kept[i] = proto.Clone(r).(*models.ActualLRP)
			}
			rec := models.ReconcileReport("cell-1", report, rows, now)
			for i := range rows {
				Expect(proto.Equal(rows[i], kept[i])).To(BeTrue(), "the rows as read were changed")
			}
			Expect(rec.Writes).To(HaveLen(len(w.writes)))
			for i := range w.writes {
				Expect(proto.Equal(rec.Writes[i].Before, w.writes[i].Before)).To(BeTrue(), "write %d before: %v", i, rec.Writes[i].Before)
				Expect(proto.Equal(rec.Writes[i].After, w.writes[i].After)).To(BeTrue(), "write %d after: %v\nwant: %v", i, rec.Writes[i].After, w.writes[i].After)
			}
			Expect(rec.Stop).To(HaveLen(len(w.stop)))
			for i := range w.stop {
				Expect(proto.Equal(rec.Stop[i], w.stop[i])).To(BeTrue(), "stop %d: %v", i, rec.Stop[i])
			}
			Expect(rec.Assigned).To(HaveLen(len(w.assigned)))
			for i := range w.assigned {
				Expect(rec.Assigned[i]).To(BeIdenticalTo(w.assigned[i]))
			}
			Expect(rec.OccupancyChanged).To(Equal(w.occupancy))
		},
		Entry("1: the reporter's row, in line: nothing to write",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo, l.Routable = net, true })},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{}),
		Entry("1: the reporter's CLAIMED row reported RUNNING: started, since now",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-a", "cell-1")},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{writes: []models.RowChange{inLine(row(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-a", "cell-1"), "ig-a")}}),
		Entry("1: a CLAIMED report is never routable, and occupied only while RUNNING",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-a", "cell-1")},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-a", func(r *models.ReportedInstance) { r.Routable, r.Occupied = true, true })},
			want{writes: []models.RowChange{{
				Before: row(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-a", "cell-1"),
				After: row(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-a", "cell-1", func(l *models.ActualLRP) {
					l.NetInfo, l.ModificationTag.Index = net, 3
				}),
			}}}),
		Entry("1: a validation instance is never routable",
			[]*models.ActualLRP{row(models.ValidationIndex, ORDINARY, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo = net })},
			[]*models.ReportedInstance{reported(models.ValidationIndex, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{}),
		Entry("1: occupancy that changes is named",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo, l.Routable = net, true })},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a", func(r *models.ReportedInstance) { r.Occupied = true })},
			want{
				writes: []models.RowChange{inLine(row(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo, l.Routable = net, true }),
					"ig-a", func(a *models.ActualLRP) { a.Occupied = true })},
				occupancy: []string{"web"},
			}),
		Entry("2: an UNCLAIMED row placed here is adopted, and not assigned",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_UNCLAIMED, "", "cell-1", func(l *models.ActualLRP) { l.PlacementError = "was full" })},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{writes: []models.RowChange{inLine(row(0, ORDINARY, models.ActualLRP_UNCLAIMED, "", "cell-1", func(l *models.ActualLRP) { l.PlacementError = "was full" }), "ig-a")}}),
		Entry("2: an UNCLAIMED row placed elsewhere: stop",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_UNCLAIMED, "", "cell-2")},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")}}),
		Entry("3: reported ORDINARY, stored SUSPECT: matched to the SUSPECT row",
			[]*models.ActualLRP{row(0, SUSPECT, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo, l.Routable = net, true })},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{}),
		Entry("4: EVACUATING while its replacement is not RUNNING: kept",
			[]*models.ActualLRP{
				row(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo, l.Routable = net, true }),
				row(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-b", "cell-2"),
			},
			[]*models.ReportedInstance{reported(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a")},
			want{}),
		Entry("4: EVACUATING once its replacement runs: stop",
			[]*models.ActualLRP{
				row(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a", "cell-1"),
				row(0, ORDINARY, models.ActualLRP_RUNNING, "ig-b", "cell-2"),
			},
			[]*models.ReportedInstance{reported(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a")}}),
		Entry("4: EVACUATING with no ORDINARY row: stop",
			[]*models.ActualLRP{row(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a", "cell-1")},
			[]*models.ReportedInstance{reported(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, EVACUATING, models.ActualLRP_RUNNING, "ig-a")}}),
		Entry("5: reported ORDINARY, stored RETIRING: matched, keeps running",
			[]*models.ActualLRP{row(0, RETIRING, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo, l.Routable = net, true })},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{}),
		Entry("5: reported ORDINARY, stored RETIRING with stop_requested: stop, as RETIRING",
			[]*models.ActualLRP{row(0, RETIRING, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.StopRequested = true })},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, RETIRING, models.ActualLRP_RUNNING, "ig-a")}}),
		Entry("6: reported RETIRING, stored ORDINARY: matched, keeps running",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.NetInfo, l.Routable = net, true })},
			[]*models.ReportedInstance{reported(0, RETIRING, models.ActualLRP_RUNNING, "ig-a")},
			want{}),
		Entry("7: no row: stop",
			nil,
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")}}),
		Entry("7: another instance's row: stop",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_RUNNING, "ig-b", "cell-1")},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")}}),
		Entry("7: another definition: stop",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a", "cell-1", func(l *models.ActualLRP) { l.DefinitionId = "v2" })},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")}}),
		Entry("7: a CRASHED row: stop",
			[]*models.ActualLRP{row(0, ORDINARY, models.ActualLRP_CRASHED, "", "")},
			[]*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")},
			want{stop: []*models.ReportedInstance{reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a")}}),
	)

	It("lists the cell's unreported UNCLAIMED rows as assigned and writes in key order (the worked example, and more)", func() {
		claimed := row(0, ORDINARY, models.ActualLRP_CLAIMED, "ig-a", "cell-1")
		crashed := row(1, ORDINARY, models.ActualLRP_CRASHED, "", "")
		placed := row(2, ORDINARY, models.ActualLRP_UNCLAIMED, "", "cell-1")
		placedEarlier := row(0, ORDINARY, models.ActualLRP_UNCLAIMED, "", "cell-1", func(l *models.ActualLRP) { l.ProcessGuid = "api" })
		elsewhere := row(3, ORDINARY, models.ActualLRP_UNCLAIMED, "", "cell-2")
		worker := row(4, ORDINARY, models.ActualLRP_CLAIMED, "ig-c", "cell-1")
		rec := models.ReconcileReport("cell-1", []*models.ReportedInstance{
			reported(4, ORDINARY, models.ActualLRP_RUNNING, "ig-c"),
			reported(0, ORDINARY, models.ActualLRP_RUNNING, "ig-a"),
			reported(1, ORDINARY, models.ActualLRP_RUNNING, "ig-b"),
		}, []*models.ActualLRP{worker, placed, elsewhere, crashed, claimed, placedEarlier}, now)

		Expect(rec.Writes).To(HaveLen(2))
		Expect(rec.Writes[0].Before).To(BeIdenticalTo(claimed))
		Expect(rec.Writes[0].After.State).To(Equal(models.ActualLRP_RUNNING))
		Expect(rec.Writes[0].After.Since).To(Equal(now))
		Expect(rec.Writes[1].Before).To(BeIdenticalTo(worker))
		Expect(rec.Stop).To(HaveLen(1))
		Expect(rec.Stop[0].InstanceGuid).To(Equal("ig-b"))
		Expect(rec.Assigned).To(Equal([]*models.ActualLRP{placedEarlier, placed}))
		Expect(rec.OccupancyChanged).To(BeEmpty())
	})
})
