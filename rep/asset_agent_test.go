package rep_test

import (
	"context"
	"os"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("the agent, with an instance still downloading its assets", func() {
	var (
		board  *countingBoard
		exe    *executor.Executor
		server *reptest.AssetServer
		cellID string
	)

	BeforeEach(func() {
		board = startCountingBoard()
		server = reptest.NewAssetServer()
		executorConfig := newConfig()
		cellID = executorConfig.CellID
		exe = reptest.StartExecutor(executorConfig)
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{
				CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
			},
			Board:            client.New(board.url),
			CellClient:       client.NewCellClient(board.url, cellID),
			Executor:         exe,
			PollInterval:     100 * time.Millisecond,
			BulkSyncInterval: time.Hour,
			Logger:           lagertest.NewTestLogger("rep"),
		})
		Expect(err).NotTo(HaveOccurred())
		signals, ready, done := make(chan os.Signal, 1), make(chan struct{}), make(chan error, 1)
		go func() { done <- agent.Run(signals, ready) }()
		<-ready
		DeferCleanup(func() {
			signals <- os.Interrupt
			Eventually(done).Should(Receive(BeNil()))
		})
	})

	It("cancels the start when the board no longer wants the instance, and removes its row rather than report a crash", func() {
		asset := server.Add("/slow.tgz", make([]byte, 200_000), ".")
		server.Stall("/slow.tgz")
		def := reptest.AssetDefinition("sh", []string{"-c", "sleep 60"}, asset)
		def.DefinitionId = ""
		def.StartTimeoutMs = 600_000
		ctx := context.Background()
		_, err := board.store.DesireLRP(ctx, &models.DesiredLRP{ProcessGuid: "slow", Domain: "rep-suite", Instances: 1, Definition: def})
		Expect(err).NotTo(HaveOccurred())
		row := board.rows("slow")[0]
		result, err := board.store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Place: []convergence.Placement{{CellID: cellID, Row: convergence.RowVersion{
			Key:   models.ActualLRPKey{ProcessGuid: "slow", Index: 0, Presence: models.ActualLRP_ORDINARY},
			State: row.GetState(), ModificationIndex: int64(row.GetModificationTag().GetIndex()),
		}}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))

		By("claiming it and downloading its asset")
		Eventually(func() int { return server.Count("/slow.tgz") }).Should(Equal(1))
		row = board.rows("slow")[0]
		Expect(row.GetState()).To(Equal(models.ActualLRP_CLAIMED))
		guid := row.GetInstanceGuid()

		By("losing its row, which the agent sees on its next poll")
		Expect(board.store.RemoveActualLRP(ctx,
			models.ActualLRPKey{ProcessGuid: "slow", Index: 0, Presence: models.ActualLRP_ORDINARY},
			models.Caller{InstanceGuid: guid, CellID: cellID})).To(Succeed())
		Eventually(server.Gone).Should(Receive(Equal("/slow.tgz")), "the download stops")
		Eventually(func() bool {
			_, ok := exe.Ended(guid)
			return ok
		}).Should(BeTrue())
		ended, _ := exe.Ended(guid)
		Expect(ended.Ending).To(HavePrefix("stopped: asset " + asset.Url + ": download stopped"))
		Eventually(func() int { return board.count(models.RouteRemoveActualLRP) }).Should(BeNumerically(">=", 1))
		Expect(board.count(models.RouteCrashActualLRP)).To(BeZero())
	})
})
