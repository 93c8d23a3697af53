package rep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/boardtest"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// meddlingBoard is the cell specs' board (see boardtest.MeddlingBoard),
// with what these specs ask of hello/0.
type meddlingBoard struct {
	*boardtest.MeddlingBoard
}

func startMeddlingBoard() *meddlingBoard {
	GinkgoHelper()
	return &meddlingBoard{boardtest.StartMeddlingBoard(nil)}
}

// rollUnderTheCell does to hello/0 what a rolling update does to a row
// that serves nothing (UNCLAIMED or CLAIMED): it moves it onto a new
// definition (VERSION=2) in place, and places it again, here on the same
// cell.
func (b *meddlingBoard) rollUnderTheCell(cellID string) {
	defer GinkgoRecover()
	ctx := context.Background()
	def := reptest.HelloDefinition(reptest.HTTPCheck(), "VERSION", "2")
	def.DefinitionId = ""
	updated, err := b.Store.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: def})
	Expect(err).NotTo(HaveOccurred())
	b.Redefine("hello", 0, updated.GetActiveDefinitionId())
	b.Place("hello", 0, cellID)
}

// describeRow says how the board has hello/0: "<state> <definition>
// <instance>", or "none".
func (b *meddlingBoard) describeRow() string {
	row := b.Row("hello", 0)
	if row == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s %s", row.GetState(), row.GetDefinitionId(), row.GetInstanceGuid())
}

// servedVersion asks the instance at the address the board's row of
// hello/0 names which version it runs, as a router's client would find
// out; "" while the row is not RUNNING or nothing answers there.
func (b *meddlingBoard) servedVersion() string {
	row := b.Row("hello", 0)
	ports := row.GetNetInfo().GetPorts()
	if row == nil || row.GetState() != models.ActualLRP_RUNNING || len(ports) == 0 {
		return ""
	}
	resp, err := http.Get(fmt.Sprintf("http://%s:%d/", row.GetNetInfo().GetAddress(), ports[0].GetHostPort()))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var answer struct {
		Version      string `json:"version"`
		InstanceGuid string `json:"instance_guid"`
	}
	if json.NewDecoder(resp.Body).Decode(&answer) != nil || answer.InstanceGuid != row.GetInstanceGuid() {
		return ""
	}
	return answer.Version
}

var _ = Describe("the agent claiming, against a real board", func() {
	var (
		board  *meddlingBoard
		exe    *executor.Executor
		cellID string
	)

	BeforeEach(func() {
		board = startMeddlingBoard()
		def := reptest.HelloDefinition(reptest.HTTPCheck(), "VERSION", "1")
		def.DefinitionId = ""
		_, err := board.Store.DesireLRP(context.Background(), &models.DesiredLRP{ProcessGuid: "hello", Domain: "rep-suite", Instances: 1, Definition: def})
		Expect(err).NotTo(HaveOccurred())
	})

	start := func() {
		GinkgoHelper()
		executorConfig := newConfig()
		cellID = executorConfig.CellID
		exe = reptest.StartExecutor(executorConfig)
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{
				CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
			},
			Board:            client.New(board.URL),
			CellClient:       client.NewCellClient(board.URL, cellID),
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
		board.Place("hello", 0, cellID)
	}

	It("runs the definition of the row it claimed when a rolling update moved the row to another since it was listed", func() {
		board.Meddle(models.RouteClaimActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		Eventually(board.servedVersion).Should(Equal("2"), "the instance at the row's address serves the definition the row names")
		Consistently(board.servedVersion).WithTimeout(time.Second).Should(Equal("2"))
		Expect(exe.Instances()).To(HaveLen(1))
		Expect(exe.Instances()[0].DefinitionId).To(Equal(board.Row("hello", 0).GetDefinitionId()))
	})

	It("stops the instance and removes its row when its start finds the row moved to another definition", func() {
		board.Meddle(models.RouteStartActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		// Nothing converges here to place the index again: the row is gone,
		// rather than RUNNING on VERSION=2 with VERSION=1 answering at its
		// address.
		Eventually(board.describeRow).Should(Equal("none"))
		Eventually(exe.Instances).Should(BeEmpty())
		Consistently(board.servedVersion).WithTimeout(time.Second).Should(BeEmpty())
	})

	It("claims again, under the same instance guid, when the claim's answer was lost after the board applied it", func() {
		board.Meddle(models.RouteClaimActualLRP, nil, true)
		start()

		Eventually(board.servedVersion).Should(Equal("1"), "the row is RUNNING, and its instance answers at its address")
		Expect(exe.Instances()).To(HaveLen(1))
		Expect(board.Count(models.RouteClaimActualLRP)).To(BeNumerically(">=", 2), "the first claim's answer was lost")
	})
})

var _ = Describe("the agent claiming, on a fake executor", func() {
	const cellID = "cell-a"
	var (
		board *meddlingBoard
		exe   *fakeExecutor
	)

	BeforeEach(func() {
		board = startMeddlingBoard()
		def := reptest.HelloDefinition(reptest.HTTPCheck(), "VERSION", "1")
		def.DefinitionId = ""
		_, err := board.Store.DesireLRP(context.Background(), &models.DesiredLRP{ProcessGuid: "hello", Domain: "rep-suite", Instances: 1, Definition: def})
		Expect(err).NotTo(HaveOccurred())
	})

	start := func() {
		GinkgoHelper()
		exe = newFakeExecutor()
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{
				CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
			},
			Board:            client.New(board.URL),
			CellClient:       client.NewCellClient(board.URL, cellID),
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
		board.Place("hello", 0, cellID)
	}

	version := func(spec executor.InstanceSpec) string {
		for _, env := range spec.Definition.GetAction().GetEnv() {
			if env.GetName() == "VERSION" {
				return env.GetValue()
			}
		}
		return ""
	}

	It("runs the instance it claimed once, and reports it RUNNING where the executor says it listens", func() {
		start()

		Eventually(func() models.ActualLRP_State { return board.Row("hello", 0).GetState() }).Should(Equal(models.ActualLRP_RUNNING))
		row := board.Row("hello", 0)
		Expect(exe.Runs()).To(HaveLen(1))
		Expect(exe.Runs()[0]).To(And(
			HaveField("ProcessGuid", "hello"),
			HaveField("Index", BeEquivalentTo(0)),
			HaveField("InstanceGuid", row.GetInstanceGuid()),
		))
		Expect(exe.Runs()[0].Definition.GetDefinitionId()).To(Equal(row.GetDefinitionId()))
		Expect(row.GetNetInfo().String()).To(Equal(fakeNetInfo(0).String()))
		Expect(row.GetCellId()).To(Equal(cellID))
	})

	It("runs the definition of the row it claimed when a rolling update moved the row to another since it was listed", func() {
		board.Meddle(models.RouteClaimActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		Eventually(func() models.ActualLRP_State { return board.Row("hello", 0).GetState() }).Should(Equal(models.ActualLRP_RUNNING))
		Consistently(exe.Runs).WithTimeout(500 * time.Millisecond).Should(HaveLen(1))
		Expect(version(exe.Runs()[0])).To(Equal("2"))
		Expect(exe.Runs()[0].Definition.GetDefinitionId()).To(Equal(board.Row("hello", 0).GetDefinitionId()))
	})

	It("claims again, under the same instance guid, when the claim's answer was lost after the board applied it, and runs it once", func() {
		board.Meddle(models.RouteClaimActualLRP, nil, true)
		start()

		Eventually(func() models.ActualLRP_State { return board.Row("hello", 0).GetState() }).Should(Equal(models.ActualLRP_RUNNING))
		Expect(board.Count(models.RouteClaimActualLRP)).To(BeNumerically(">=", 2), "the first claim's answer was lost")
		Expect(exe.Runs()).To(HaveLen(1))
		Expect(exe.Runs()[0].InstanceGuid).To(Equal(board.Row("hello", 0).GetInstanceGuid()))
	})
})
