package main_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork actual-lrps REASON", func() {
	const (
		crashReason = "health check failed: GET /health on port 8080: 503\n" +
			"body: the database at db.internal:5432 refused the connection, retrying in 5s"
		placementError = "insufficient resources: no cell has 64 MB of memory free"
	)
	var board string

	BeforeEach(func() {
		var store *sqldb.SQLDB
		board, store = startBoardWithStore(nil)
		Expect(runCork(board, "", "desire", fixture("hello-local.json")).code).To(Equal(0))
		ctx := context.Background()
		Expect(store.RegisterCell(ctx, &models.Cell{
			CellId: "cell-a", RepUrl: "http://10.0.0.5:1800", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
		}, time.Minute)).To(Succeed())

		// What convergence would write: index 0 and 1 placed on cell-a,
		// index 2 fitting nowhere.
		rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "hello"})
		Expect(err).NotTo(HaveOccurred())
		version := func(index int32) convergence.RowVersion {
			for _, row := range rows {
				if row.GetIndex() == index {
					return convergence.RowVersion{
						Key:   models.ActualLRPKey{ProcessGuid: "hello", Index: index, Presence: models.ActualLRP_ORDINARY},
						State: row.GetState(), ModificationIndex: int64(row.GetModificationTag().GetIndex()),
					}
				}
			}
			Fail("no row for the index")
			return convergence.RowVersion{}
		}
		result, err := store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{
			Place:           []convergence.Placement{{Row: version(0), CellID: "cell-a"}, {Row: version(1), CellID: "cell-a"}},
			PlacementFailed: []convergence.PlacementFailure{{Row: version(2), Reason: placementError}},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(3))

		// Index 0 crashes; index 1 runs.
		cell := client.NewCellClient(board, "cell-a")
		for index, guid := range []string{"ig-0", "ig-1"} {
			instance := client.Instance{ProcessGuid: "hello", Index: int32(index), InstanceGuid: guid}
			_, err = cell.ClaimActualLRP(ctx, instance)
			Expect(err).NotTo(HaveOccurred())
			_, err = cell.StartActualLRP(ctx, instance, &models.NetInfo{Address: "10.0.0.5"}, true)
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = cell.CrashActualLRP(ctx, client.Instance{ProcessGuid: "hello", Index: 0, InstanceGuid: "ig-0"}, crashReason)
		Expect(err).NotTo(HaveOccurred())
	})

	It("says why an instance crashed or has no cell, on one line of at most 60 characters; JSON keeps it whole", func() {
		r := runCork(board, "", "actual-lrps", "--guid", "hello", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		table := r.lines()
		Expect(table).To(HaveLen(5), "a header and 4 rows, each on one line")
		reasonAt := strings.Index(table[0], "REASON")
		Expect(reasonAt).To(BeNumerically(">", 0), "a REASON column")
		Expect(table[0][reasonAt:]).To(Equal("REASON"), "the last column")
		reasons := map[string]string{}
		for _, line := range table[1:] {
			fields := strings.Fields(line)
			reasons[fields[1]+" "+fields[3]] = line[reasonAt:]
		}
		Expect(reasons).To(Equal(map[string]string{
			"0 CRASHED":   "health check failed: GET /health on port 8080: 503 body: th…",
			"1 RUNNING":   "-",
			"2 UNCLAIMED": placementError,
			"3 UNCLAIMED": "-",
		}))
		Expect([]rune(reasons["0 CRASHED"])).To(HaveLen(60))

		r = runCork(board, "", "actual-lrps", "--guid", "hello", "--index", "0")
		var crashed models.ActualLRP
		parseLines(r, &crashed)
		Expect(crashed.GetCrashReason()).To(Equal(crashReason))
		r = runCork(board, "", "actual-lrps", "--guid", "hello", "--index", "2")
		var unplaced models.ActualLRP
		parseLines(r, &unplaced)
		Expect(unplaced.GetPlacementError()).To(Equal(placementError))
	})
})
