package rep_test

import (
	"context"
	"os"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("the agent evacuating its cell, on a fake executor", func() {
	const (
		cellID            = "cell-a"
		evacuationTimeout = 2 * time.Second
	)
	var (
		board   *countingBoard
		exe     *fakeExecutor
		signals chan os.Signal
		done    chan error
		guids   []string
	)

	BeforeEach(func() {
		board = startCountingBoard()
		exe = newFakeExecutor()
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{
				CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
			},
			Board:                  client.New(board.url),
			CellClient:             client.NewCellClient(board.url, cellID),
			Executor:               exe,
			PollInterval:           100 * time.Millisecond,
			BulkSyncInterval:       time.Hour,
			EvacuationTimeout:      evacuationTimeout,
			StopGracePeriod:        50 * time.Millisecond,
			UnroutableRetryTimeout: time.Second,
			Logger:                 lagertest.NewTestLogger("rep"),
		})
		Expect(err).NotTo(HaveOccurred())
		signals, done = make(chan os.Signal, 1), make(chan error, 1)
		ready, exited := make(chan struct{}), make(chan struct{})
		go func() {
			done <- agent.Run(signals, ready)
			close(exited)
		}()
		<-ready
		DeferCleanup(func() {
			select {
			case signals <- os.Interrupt:
			default:
			}
			Eventually(exited).Should(BeClosed())
		})

		ctx := context.Background()
		def := reptest.HelloDefinition(reptest.HTTPCheck())
		def.DefinitionId = ""
		// A budget of 100%: this spec is about the rep's hand-over, not the
		// disruption budget, which with its default of 0 hands over one
		// instance at a time (docs/disruption-budget.md).
		_, err = board.store.DesireLRP(ctx, &models.DesiredLRP{ProcessGuid: "hello", Domain: "rep-suite", Instances: 2, Definition: def,
			DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "100%"}})
		Expect(err).NotTo(HaveOccurred())
		var placements []convergence.Placement
		for _, row := range board.rows("hello") {
			placements = append(placements, convergence.Placement{CellID: cellID, Row: convergence.RowVersion{
				Key:   models.ActualLRPKey{ProcessGuid: "hello", Index: row.GetIndex(), Presence: models.ActualLRP_ORDINARY},
				State: row.GetState(), ModificationIndex: int64(row.GetModificationTag().GetIndex()),
			}})
		}
		result, err := board.store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Place: placements})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(2))
		Eventually(func() []models.ActualLRP_State {
			var states []models.ActualLRP_State
			for _, row := range board.rows("hello") {
				states = append(states, row.GetState())
			}
			return states
		}).Should(Equal([]models.ActualLRP_State{models.ActualLRP_RUNNING, models.ActualLRP_RUNNING}))
		guids = nil
		for _, row := range board.rows("hello") {
			guids = append(guids, row.GetInstanceGuid())
		}
	})

	evacuating := func() []string {
		var out []string
		for _, row := range board.rows("hello") {
			if row.GetPresence() == models.ActualLRP_EVACUATING {
				out = append(out, row.GetInstanceGuid())
			}
		}
		return out
	}

	It("on SIGTERM hands its running instances over and keeps them running, then stops the rest when the evacuation times out", func() {
		signals <- syscall.SIGTERM

		By("marking the cell draining and each instance EVACUATING, still running")
		Eventually(evacuating).Should(ConsistOf(guids))
		Expect(board.count(models.RouteDrainCell)).To(Equal(1))
		Expect(board.count(models.RouteEvacuateActualLRP)).To(BeNumerically(">=", 2))
		Expect(exe.Instances()).To(HaveLen(2))
		Expect(exe.Stops()).To(BeEmpty())

		By("no replacement runs anywhere: the timeout stops them, and their rows go")
		Eventually(done).WithTimeout(evacuationTimeout + 10*time.Second).Should(Receive(BeNil()))
		Expect(exe.Stops()).To(ConsistOf(guids))
		Expect(exe.Instances()).To(BeEmpty())
		Expect(evacuating()).To(BeEmpty())
	})
})
