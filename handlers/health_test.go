package handlers_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// healthReport is a valid health report of cellID about one definition of
// guid: 4 checks (1 failed) within 5 ms, 2 instances within 32 MB: index
// 0 (3 of the checks, the failed one among them, 20 MB) and index 1 (1
// check, 30 MB).
func healthReport(cellID, guid string) *models.ReportHealthRequest {
	latencies := func(checks int64) []int64 {
		counts := make([]int64, len(models.HealthLatencyBucketsMs)+1)
		counts[2] = checks
		return counts
	}
	memory := make([]int64, len(models.MemoryBucketsMB)+1)
	memory[1] = 2
	return &models.ReportHealthRequest{CellId: cellID, Health: []*models.DefinitionHealth{{
		ProcessGuid: guid, DefinitionId: "v1", Checks: 4, CheckFailures: 1,
		LatencyBucketCounts: latencies(4), MemoryBucketCounts: memory,
		Instances: []*models.InstanceHealth{
			{Index: 0, InstanceGuid: "instance-0", Checks: 3, CheckFailures: 1, LatencyBucketCounts: latencies(3), MemoryMb: proto.Int64(20)},
			{Index: 1, InstanceGuid: "instance-1", Checks: 1, LatencyBucketCounts: latencies(1), MemoryMb: proto.Int64(30)},
		},
	}}}
}

var _ = Describe("A cell's health report", func() {
	for _, wire := range wires {
		It("logs a definition_health event per entry, with "+wire.name+" bodies, and a refused one logs nothing", func() {
			store := stores[testdb.SQLite]
			b := newBoard(store, wire)
			ctx := context.Background()
			// sequence moves every committed event into the log: the store
			// is shared with the other specs, whose events no tailer moves.
			sequence := func() {
				GinkgoHelper()
				for {
					moved, err := store.SequenceEvents(ctx, 1000)
					Expect(err).NotTo(HaveOccurred())
					if moved < 1000 {
						return
					}
				}
			}
			guid := randomName("web")
			// logged is the events of guid logged after after.
			logged := func(after uint64) []models.Event {
				GinkgoHelper()
				sequence()
				var out []models.Event
				for {
					read, err := store.ReadEvents(ctx, after, 1000)
					Expect(err).NotTo(HaveOccurred())
					for _, e := range read {
						if e.Key == guid {
							out = append(out, e.Event)
						}
						after = e.ID
					}
					if len(read) < 1000 {
						return out
					}
				}
			}
			// The cell's own instances, instance-0 and instance-1, which
			// its report is about (a report of another's logs nothing).
			cellID := randomName("cell")
			registered := &models.RegisterCellResponse{}
			b.call(models.RouteRegisterCell, registerRequest(cellID), registered)
			Expect(registered.GetError()).To(BeNil())
			b.mustDesire(newLRP(guid, randomName("domain"), 2))
			for index := range int32(2) {
				place(store, models.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY}, cellID)
				claimed := &models.ActualLRPLifecycleResponse{}
				b.call(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, Index: index,
					InstanceGuid: fmt.Sprintf("instance-%d", index), CellId: cellID}, claimed)
				Expect(claimed.GetError()).To(BeNil())
			}
			rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: guid})
			Expect(err).NotTo(HaveOccurred())
			definitionID := rows[0].GetDefinitionId()
			// ofCell is healthReport of the cell's instances.
			ofCell := func() *models.ReportHealthRequest {
				r := healthReport(cellID, guid)
				r.Health[0].DefinitionId = definitionID
				return r
			}

			sequence()
			_, last, err := store.EventLogBounds(ctx)
			Expect(err).NotTo(HaveOccurred())

			report := ofCell()
			// A second entry of index 0 alone, as after instance-1 ended.
			second := ofCell().Health[0]
			second.Checks, second.CheckFailures = 3, 1
			second.LatencyBucketCounts[2] = 3
			second.Instances = second.Instances[:1]
			report.Health = append(report.Health, second)
			resp := &models.ReportHealthResponse{}
			b.call(models.RouteReportHealth, report, resp)
			Expect(resp.GetError()).To(BeNil())
			events := logged(last)
			Expect(events).To(HaveLen(2))
			for i, e := range events {
				Expect(e.Type).To(Equal(models.EventDefinitionHealth))
				Expect(e.Key).To(Equal(guid))
				Expect(proto.Equal(e.Payload, &models.DefinitionHealthEvent{CellId: cellID, Health: report.Health[i]})).To(BeTrue(), "event %d: %v", i, e.Payload)
			}

			By("refusing a report whose latency buckets do not count its checks, with the field named")
			_, last, err = store.EventLogBounds(ctx)
			Expect(err).NotTo(HaveOccurred())
			bad := ofCell()
			bad.Health[0].Checks = 5
			resp = &models.ReportHealthResponse{}
			b.call(models.RouteReportHealth, bad, resp)
			Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
			Expect(resp.GetError().GetMessage()).To(Equal("health[0].latency_bucket_counts: must count each check once: 4 counted, checks 5"))
			Expect(logged(last)).To(BeEmpty())

			By("refusing one whose instances count more checks than the entry, and accepting an older rep's without instances")
			bad = ofCell()
			bad.Health[0].Instances[1].Checks, bad.Health[0].Instances[1].LatencyBucketCounts[2] = 2, 2
			resp = &models.ReportHealthResponse{}
			b.call(models.RouteReportHealth, bad, resp)
			Expect(resp.GetError().GetMessage()).To(Equal("health[0].instances: must count at most the entry's checks (4), got 5"))
			Expect(logged(last)).To(BeEmpty())
			old := ofCell()
			old.Health[0].Instances = nil
			resp = &models.ReportHealthResponse{}
			b.call(models.RouteReportHealth, old, resp)
			Expect(resp.GetError()).To(BeNil())
			Expect(logged(last)).To(HaveLen(1))
		})
	}
})
