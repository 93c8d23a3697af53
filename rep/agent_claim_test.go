package rep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// meddlingBoard is a real board (the API over SQLite) behind a proxy that
// meddles with the first call of a route: before[route] runs before it
// reaches the board, and when cut[route] the board applies it but the
// connection is closed before the answer goes back, as when the board is
// killed right after writing it. No convergence runs: the specs make its
// writes themselves.
type meddlingBoard struct {
	store *sqldb.SQLDB
	url   string

	mu     sync.Mutex
	calls  map[string]int
	before map[string]func()
	cut    map[string]bool
}

func startMeddlingBoard() *meddlingBoard {
	GinkgoHelper()
	ctx := context.Background()
	database, err := testdb.Create(testdb.SQLite)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	conn, err := sqldb.Open(ctx, testdb.SQLite, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	Expect(migrations.Up(ctx, conn, testdb.SQLite)).To(Succeed())

	b := &meddlingBoard{store: sqldb.New(conn, testdb.SQLite), calls: map[string]int{}, before: map[string]func(){}, cut: map[string]bool{}}
	api := handlers.New(lager.NewLogger("board"), b.store, nil)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.calls[r.URL.Path]++
		first := b.calls[r.URL.Path] == 1
		before, cut := b.before[r.URL.Path], b.cut[r.URL.Path]
		b.mu.Unlock()
		if first && before != nil {
			before()
		}
		if !first || !cut {
			api.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		Expect(err).NotTo(HaveOccurred())
		conn.Close()
	}))
	DeferCleanup(server.Close)
	b.url = server.URL
	return b
}

// meddle sets what the first call of route meets.
func (b *meddlingBoard) meddle(route string, before func(), cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.before[route], b.cut[route] = before, cut
}

func (b *meddlingBoard) count(route string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[route]
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
	updated, err := b.store.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: def})
	Expect(err).NotTo(HaveOccurred())
	result, err := b.store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{
		Redefine: []convergence.Redefinition{{Row: rowVersion(b.row("hello", 0)), DefinitionID: updated.GetActiveDefinitionId()}},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(result.Applied).To(Equal(1))
	b.place("hello", 0, cellID)
}

// row is the ORDINARY row of (processGuid, index), nil when there is none.
func (b *meddlingBoard) row(processGuid string, index int32) *models.ActualLRP {
	GinkgoHelper()
	rows, err := b.store.ActualLRPs(context.Background(), db.ActualLRPFilter{ProcessGuid: processGuid})
	Expect(err).NotTo(HaveOccurred())
	for _, lrp := range rows {
		if lrp.GetIndex() == index && lrp.GetPresence() == models.ActualLRP_ORDINARY {
			return lrp
		}
	}
	return nil
}

// describeRow says how the board has hello/0: "<state> <definition>
// <instance>", or "none".
func (b *meddlingBoard) describeRow() string {
	row := b.row("hello", 0)
	if row == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s %s", row.GetState(), row.GetDefinitionId(), row.GetInstanceGuid())
}

func rowVersion(lrp *models.ActualLRP) convergence.RowVersion {
	return convergence.RowVersion{
		Key:   models.ActualLRPKey{ProcessGuid: lrp.GetProcessGuid(), Index: lrp.GetIndex(), Presence: lrp.GetPresence()},
		State: lrp.GetState(), ModificationIndex: int64(lrp.GetModificationTag().GetIndex()),
	}
}

// place puts the UNCLAIMED row of (processGuid, index) on cellID, as a
// convergence pass does.
func (b *meddlingBoard) place(processGuid string, index int32, cellID string) {
	GinkgoHelper()
	row := b.row(processGuid, index)
	Expect(row).NotTo(BeNil())
	result, err := b.store.ApplyConvergence(context.Background(), &convergence.ConvergenceWrites{
		Place: []convergence.Placement{{CellID: cellID, Row: rowVersion(row)}},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(result.Applied).To(Equal(1))
}

// servedVersion asks the instance at the address the board's row of
// hello/0 names which version it runs, as a router's client would find
// out; "" while the row is not RUNNING or nothing answers there.
func (b *meddlingBoard) servedVersion() string {
	row := b.row("hello", 0)
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
		_, err := board.store.DesireLRP(context.Background(), &models.DesiredLRP{ProcessGuid: "hello", Domain: "rep-suite", Instances: 1, Definition: def})
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
		board.place("hello", 0, cellID)
	}

	It("runs the definition of the row it claimed when a rolling update moved the row to another since it was listed", func() {
		board.meddle(models.RouteClaimActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		Eventually(board.servedVersion).Should(Equal("2"), "the instance at the row's address serves the definition the row names")
		Consistently(board.servedVersion).WithTimeout(time.Second).Should(Equal("2"))
		Expect(exe.Instances()).To(HaveLen(1))
		Expect(exe.Instances()[0].DefinitionId).To(Equal(board.row("hello", 0).GetDefinitionId()))
	})

	It("stops the instance and removes its row when its start finds the row moved to another definition", func() {
		board.meddle(models.RouteStartActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		// Nothing converges here to place the index again: the row is gone,
		// rather than RUNNING on VERSION=2 with VERSION=1 answering at its
		// address.
		Eventually(board.describeRow).Should(Equal("none"))
		Eventually(exe.Instances).Should(BeEmpty())
		Consistently(board.servedVersion).WithTimeout(time.Second).Should(BeEmpty())
	})

	It("claims again, under the same instance guid, when the claim's answer was lost after the board applied it", func() {
		board.meddle(models.RouteClaimActualLRP, nil, true)
		start()

		Eventually(board.servedVersion).Should(Equal("1"), "the row is RUNNING, and its instance answers at its address")
		Expect(exe.Instances()).To(HaveLen(1))
		Expect(board.count(models.RouteClaimActualLRP)).To(BeNumerically(">=", 2), "the first claim's answer was lost")
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
		_, err := board.store.DesireLRP(context.Background(), &models.DesiredLRP{ProcessGuid: "hello", Domain: "rep-suite", Instances: 1, Definition: def})
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
		board.place("hello", 0, cellID)
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

		Eventually(func() models.ActualLRP_State { return board.row("hello", 0).GetState() }).Should(Equal(models.ActualLRP_RUNNING))
		row := board.row("hello", 0)
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
		board.meddle(models.RouteClaimActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		Eventually(func() models.ActualLRP_State { return board.row("hello", 0).GetState() }).Should(Equal(models.ActualLRP_RUNNING))
		Consistently(exe.Runs).WithTimeout(500 * time.Millisecond).Should(HaveLen(1))
		Expect(version(exe.Runs()[0])).To(Equal("2"))
		Expect(exe.Runs()[0].Definition.GetDefinitionId()).To(Equal(board.row("hello", 0).GetDefinitionId()))
	})

	It("claims again, under the same instance guid, when the claim's answer was lost after the board applied it, and runs it once", func() {
		board.meddle(models.RouteClaimActualLRP, nil, true)
		start()

		Eventually(func() models.ActualLRP_State { return board.row("hello", 0).GetState() }).Should(Equal(models.ActualLRP_RUNNING))
		Expect(board.count(models.RouteClaimActualLRP)).To(BeNumerically(">=", 2), "the first claim's answer was lost")
		Expect(exe.Runs()).To(HaveLen(1))
		Expect(exe.Runs()[0].InstanceGuid).To(Equal(board.row("hello", 0).GetInstanceGuid()))
	})
})
