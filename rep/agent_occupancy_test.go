package rep_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

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
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// countingBoard is a real board (the API over SQLite) behind a proxy that
// counts the calls by route and can play a board that predates a route.
type countingBoard struct {
	store *sqldb.SQLDB
	conn  *sql.DB
	url   string

	mu      sync.Mutex
	calls   map[string]int
	unknown map[string]bool
}

func startCountingBoard() *countingBoard {
	GinkgoHelper()
	ctx := context.Background()
	database, err := testdb.Create(testdb.SQLite)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	conn, err := sqldb.Open(ctx, testdb.SQLite, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	Expect(migrations.Up(ctx, conn, testdb.SQLite)).To(Succeed())

	b := &countingBoard{store: sqldb.New(conn, testdb.SQLite), conn: conn, calls: map[string]int{}, unknown: map[string]bool{}}
	api := handlers.New(lagertest.NewTestLogger("board"), b.store, nil)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.calls[r.URL.Path]++
		if b.unknown[r.URL.Path] {
			// What a board without the route answers.
			r.URL.Path = "/v1/no-such-route"
		}
		b.mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	DeferCleanup(server.Close)
	b.url = server.URL
	return b
}

func (b *countingBoard) count(route string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[route]
}

func (b *countingBoard) forget(route string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unknown[route] = true
}

// holds writes a RUNNING row of processGuid at index on cellID, running
// definitionID as instanceGuid, as a claim and a start would leave it: an
// instance the cell's health reports may speak for.
func (b *countingBoard) holds(cellID, processGuid string, index int32, definitionID, instanceGuid string) {
	GinkgoHelper()
	_, err := b.conn.Exec(`INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, instance_guid, cell_id,
 definition_id, state, since, modification_tag_epoch) VALUES (?, ?, 'ORDINARY', 'rep-suite', ?, ?, ?, 'RUNNING', 1, 'e')`,
		processGuid, index, instanceGuid, cellID, definitionID)
	Expect(err).NotTo(HaveOccurred())
}

func (b *countingBoard) rows(processGuid string) []*models.ActualLRP {
	GinkgoHelper()
	rows, err := b.store.ActualLRPs(context.Background(), db.ActualLRPFilter{ProcessGuid: processGuid})
	Expect(err).NotTo(HaveOccurred())
	return rows
}

// occupied lists, by index, whether each row is occupied.
func (b *countingBoard) occupied(processGuid string) []bool {
	GinkgoHelper()
	var flags []bool
	for _, row := range b.rows(processGuid) {
		flags = append(flags, row.GetOccupied())
	}
	return flags
}

var _ = Describe("the agent, against a real board", func() {
	var (
		board *countingBoard
		agent *rep.Agent
		rows  []*models.ActualLRP
	)

	BeforeEach(func() {
		board = startCountingBoard()
		// What the instances say of themselves is the agent's business
		// alone: nothing needs to run.
		const cellID = "cell-a"
		var err error
		agent, err = rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{
				CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
			},
			Board:      client.New(board.url),
			CellClient: client.NewCellClient(board.url, cellID),
			Executor:   newFakeExecutor(),
			// Claims come quickly; a bulk report only when asked for.
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

		ctx := context.Background()
		def := reptest.HelloDefinition(reptest.HTTPCheck())
		def.DefinitionId = ""
		_, err = board.store.DesireLRP(ctx, &models.DesiredLRP{ProcessGuid: "hello", Domain: "rep-suite", Instances: 4, Definition: def})
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
		Expect(result.Applied).To(Equal(4))

		Eventually(func() []models.ActualLRP_State {
			var states []models.ActualLRP_State
			for _, row := range board.rows("hello") {
				states = append(states, row.GetState())
			}
			return states
		}).Should(Equal([]models.ActualLRP_State{
			models.ActualLRP_RUNNING, models.ActualLRP_RUNNING, models.ActualLRP_RUNNING, models.ActualLRP_RUNNING,
		}))
		rows = board.rows("hello")
	})

	It("sends a burst of occupancy changes of several instances in one call, between bulk reports", func() {
		Expect(board.count(models.RouteReportOccupancy)).To(BeZero())
		asked := time.Now()
		for _, i := range []int{0, 1, 2} {
			Expect(agent.SetOccupied(rows[i].GetInstanceGuid(), true)).To(BeTrue())
		}
		// One instance changes its mind twice: only where it ends counts.
		Expect(agent.SetOccupied(rows[3].GetInstanceGuid(), true)).To(BeTrue())
		Expect(agent.SetOccupied(rows[3].GetInstanceGuid(), false)).To(BeTrue())
		Expect(agent.SetOccupied(rows[3].GetInstanceGuid(), true)).To(BeTrue())
		Expect(agent.SetOccupied("not-an-instance", true)).To(BeFalse())

		Eventually(func() []bool { return board.occupied("hello") }).WithPolling(10 * time.Millisecond).
			Should(Equal([]bool{true, true, true, true}))
		AddReportEntry("a burst of occupancy on the board after", time.Since(asked).Round(time.Millisecond).String())
		Expect(time.Since(asked)).To(BeNumerically("<", time.Second), "within about a second")
		Consistently(func() int { return board.count(models.RouteReportOccupancy) }).
			WithTimeout(3 * rep.DefaultOccupancyBatchInterval).Should(Equal(1))
		Expect(board.count(models.RouteBulkReport)).To(BeZero(), "no bulk report carried them")

		By("a change back is another small batch")
		for _, i := range []int{1, 3} {
			Expect(agent.SetOccupied(rows[i].GetInstanceGuid(), false)).To(BeTrue())
		}
		Eventually(func() []bool { return board.occupied("hello") }).Should(Equal([]bool{true, false, true, false}))
		Consistently(func() int { return board.count(models.RouteReportOccupancy) }).
			WithTimeout(3 * rep.DefaultOccupancyBatchInterval).Should(Equal(2))
		Expect(board.count(models.RouteBulkReport)).To(BeZero())
		for i, row := range board.rows("hello") {
			Expect(row.GetModificationTag().GetIndex()).To(BeNumerically(">", rows[i].GetModificationTag().GetIndex()))
		}
	})

	It("falls back to a bulk report when an occupancy call fails, as with a board that predates it", func() {
		board.forget(models.RouteReportOccupancy)
		Expect(agent.SetOccupied(rows[0].GetInstanceGuid(), true)).To(BeTrue())
		Expect(agent.SetOccupied(rows[2].GetInstanceGuid(), true)).To(BeTrue())
		Eventually(func() []bool { return board.occupied("hello") }).Should(Equal([]bool{true, false, true, false}))
		Expect(board.count(models.RouteReportOccupancy)).To(Equal(1))
		Expect(board.count(models.RouteBulkReport)).To(Equal(1))

		By("the changes it put back go with the next change once the board knows the route")
		board.mu.Lock()
		board.unknown = map[string]bool{}
		board.mu.Unlock()
		Expect(agent.SetOccupied(rows[1].GetInstanceGuid(), true)).To(BeTrue())
		Eventually(func() []bool { return board.occupied("hello") }).Should(Equal([]bool{true, true, true, false}))
		Eventually(func() int { return board.count(models.RouteReportOccupancy) }).Should(Equal(2))
		Expect(board.count(models.RouteBulkReport)).To(Equal(1))
	})
})
