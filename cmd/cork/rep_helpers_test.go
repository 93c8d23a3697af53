package main_test

import (
	"context"
	"net"
	"net/http/httptest"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
)

// Helpers of the specs where cork talks to reps (cork logs, cork
// actual-lrps -o wide).

// registerCellOn registers a cell whose rep answers at repURL.
func registerCellOn(store *sqldb.SQLDB, cellID, repURL string) {
	GinkgoHelper()
	Expect(store.RegisterCell(context.Background(), &models.Cell{
		CellId: cellID, RepUrl: repURL, Zone: "z1",
		Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
	}, time.Minute)).To(Succeed())
}

// claimOnCell places hello/index on the cell and claims it there as
// instanceGuid, as the cell's rep would.
func claimOnCell(store *sqldb.SQLDB, board, cellID string, index int32, instanceGuid string) *client.CellClient {
	GinkgoHelper()
	ctx := context.Background()
	rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "hello", Index: indexPtr(index)})
	Expect(err).NotTo(HaveOccurred())
	Expect(rows).To(HaveLen(1))
	version := convergence.RowVersion{
		Key:   models.ActualLRPKey{ProcessGuid: "hello", Index: index, Presence: models.ActualLRP_ORDINARY},
		State: rows[0].GetState(), ModificationIndex: int64(rows[0].GetModificationTag().GetIndex()),
	}
	result, err := store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Place: []convergence.Placement{{Row: version, CellID: cellID}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(result.Applied).To(Equal(1))
	cell := client.NewCellClient(board, cellID)
	_, err = cell.ClaimActualLRP(ctx, client.Instance{ProcessGuid: "hello", Index: index, InstanceGuid: instanceGuid})
	Expect(err).NotTo(HaveOccurred())
	return cell
}

// deadURL is a URL where nothing listens.
func deadURL() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	url := "http://" + l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return url
}

// startRep serves a real rep's HTTP server over a real executor for
// cellID, registers the cell with its URL and returns the executor; its
// agent is never started (nothing here needs it).
func startRep(store *sqldb.SQLDB, board, cellID string, portMin uint32) *executor.Executor {
	GinkgoHelper()
	exe, err := executor.NewExecutor(executor.ExecutorConfig{
		CellID: cellID, DataDir: GinkgoT().TempDir(), PortMin: portMin, PortMax: portMin + 9,
		Logger: lagertest.NewTestLogger("rep"),
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(exe.Shutdown)
	agent, err := rep.NewAgent(rep.AgentConfig{
		Cell: &models.Cell{CellId: cellID}, Board: client.New(board),
		CellClient: client.NewCellClient(board, cellID), Executor: exe,
	})
	Expect(err).NotTo(HaveOccurred())
	server := httptest.NewServer(rep.NewServer(lagertest.NewTestLogger("rep"), agent, exe, nil))
	DeferCleanup(server.Close)
	registerCellOn(store, cellID, server.URL)
	return exe
}

func indexPtr(i int32) *int32 { return &i }
