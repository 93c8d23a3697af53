package main

import (
	"context"
	"fmt"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// Draining a cell end to end: the built bbs on each dialect and simulated
// cells (internal/simcell) that evacuate as a rep does when a heartbeat
// says their cell drains.
var _ = Describe("Evacuation, end to end", func() {
	ctx := context.Background()

	for _, dialect := range testdb.MustDialects() {
		Describe("on "+dialect, func() {
			It("moves a draining cell's instances to the other cell, start-before-stop, and removes the evacuating rows", func() {
				board := startConvergingBoard(newDatabase(dialect), nil)
				api := board.client()
				events := recordEvents(board)
				Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
				cellA := startCell(board, "cell-a", "z1")
				cellB := startCell(board, "cell-b", "z2")

				_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 4))
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).
					Should(Equal(map[string]int{"cell-a RUNNING": 2, "cell-b RUNNING": 2}))
				Eventually(routableIndices(board, "web")).WithTimeout(convergeLimit).Should(Equal([]int32{0, 1, 2, 3}))
				onA := indicesOn(instances(board, "web"), "cell-a")
				Expect(onA).To(HaveLen(2))

				By("draining cell-a: its rep learns of it on a heartbeat and evacuates")
				Expect(api.DrainCell(ctx, "cell-a")).To(Succeed())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-b RUNNING": 4}))
				Expect(cellA.Running()).To(BeEmpty())
				Eventually(cellA.Evacuating).WithTimeout(convergeLimit).Should(BeEmpty(), "told to stop once the replacements ran")
				Expect(stoppedIndices([]*simcell.Cell{cellA}, "web")).To(ConsistOf(onA))
				Expect(runningIndices([]*simcell.Cell{cellB}, "web")()).To(Equal([]int32{0, 1, 2, 3}))

				By("at no moment the events show did an index lack a RUNNING, routable instance")
				Eventually(events.count(models.EventActualLRPRemoved, func(e client.Event) bool {
					return actualOf(e).GetProcessGuid() == "web" && actualOf(e).GetPresence() == models.ActualLRP_EVACUATING
				})).Should(Equal(2), "the stream has every change up to the last evacuating row's removal")
				Expect(indicesWithoutRoutable(events.all(), "web", 4)).To(BeEmpty())

				By("what the event stream shows: each instance was kept as EVACUATING, its replacement ran on cell-b, and then it was removed")
				evacuated := events.matching(models.EventActualLRPCreated, func(e client.Event) bool {
					lrp := actualOf(e)
					return lrp.GetProcessGuid() == "web" && lrp.GetPresence() == models.ActualLRP_EVACUATING
				})
				Expect(evacuated).To(HaveLen(2))
				for _, e := range evacuated {
					Expect(actualOf(e).GetCellId()).To(Equal("cell-a"))
					Expect(actualOf(e).GetState()).To(Equal(models.ActualLRP_RUNNING))
					Expect(actualOf(e).GetRoutable()).To(BeTrue())
				}
				Expect(indices(evacuated)).To(ConsistOf(onA))
				Eventually(func() []int32 {
					return indices(events.matching(models.EventActualLRPRemoved, func(e client.Event) bool {
						return actualOf(e).GetProcessGuid() == "web" && actualOf(e).GetPresence() == models.ActualLRP_EVACUATING
					}))
				}).Should(ConsistOf(onA))

				By("the drained cell is present, draining, and gets nothing new")
				cells, err := api.Cells(ctx)
				Expect(err).NotTo(HaveOccurred())
				for _, c := range cells {
					Expect(c.GetPresent()).To(BeTrue(), c.GetCellId())
					Expect(c.GetDraining()).To(Equal(c.GetCellId() == "cell-a"), c.GetCellId())
				}
				_, err = api.UpdateDesiredLRP(ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(6)})
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-b RUNNING": 6}))
			})
		})
	}
})

// routableIndices lists the indices of guid that have a RUNNING, routable
// row of any presence, sorted.
func routableIndices(board *runningBoard, guid string) func() []int32 {
	return func() []int32 {
		seen := map[int32]bool{}
		for _, lrp := range instances(board, guid) {
			if lrp.GetState() == models.ActualLRP_RUNNING && lrp.GetRoutable() {
				seen[lrp.GetIndex()] = true
			}
		}
		out := []int32{}
		for index := range seen {
			out = append(out, index)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
}

func indicesOn(lrps []*models.ActualLRP, cellID string) []int32 {
	out := []int32{}
	for _, lrp := range lrps {
		if lrp.GetCellId() == cellID {
			out = append(out, lrp.GetIndex())
		}
	}
	return out
}

// indicesWithoutRoutable replays guid's actual LRP events in order —
// every committed change, as the board published it — and lists each
// moment, from the first at which every index below instances had a
// RUNNING, routable row (of any presence), at which one of them had none.
func indicesWithoutRoutable(all []client.Event, guid string, instances int32) []string {
	type rowKey struct {
		index    int32
		presence models.ActualLRP_Presence
	}
	rows := map[rowKey]*models.ActualLRP{}
	steady := false
	var gaps []string
	for _, e := range all {
		switch p := e.Payload.(type) {
		case *models.ActualLRPCreatedEvent:
			if lrp := p.GetActualLrp(); lrp.GetProcessGuid() == guid {
				rows[rowKey{lrp.GetIndex(), lrp.GetPresence()}] = lrp
			}
		case *models.ActualLRPChangedEvent:
			if before := p.GetBefore(); before.GetProcessGuid() == guid {
				delete(rows, rowKey{before.GetIndex(), before.GetPresence()})
				after := p.GetAfter()
				rows[rowKey{after.GetIndex(), after.GetPresence()}] = after
			}
		case *models.ActualLRPRemovedEvent:
			if lrp := p.GetActualLrp(); lrp.GetProcessGuid() == guid {
				delete(rows, rowKey{lrp.GetIndex(), lrp.GetPresence()})
			}
		default:
			continue
		}
		var unserved []int32
		for index := range instances {
			served := false
			for key, lrp := range rows {
				if key.index == index && lrp.GetState() == models.ActualLRP_RUNNING && lrp.GetRoutable() {
					served = true
				}
			}
			if !served {
				unserved = append(unserved, index)
			}
		}
		if !steady {
			steady = len(unserved) == 0
			continue
		}
		for _, index := range unserved {
			gaps = append(gaps, fmt.Sprintf("index %d after event %d (%s)", index, e.ID, e.Type))
		}
	}
	if !steady {
		gaps = append(gaps, "never had every index RUNNING and routable")
	}
	return gaps
}
