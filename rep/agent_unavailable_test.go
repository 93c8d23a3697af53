package rep_test

import (
	"context"
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

// outageStore is a real board store (SQLite) whose actual LRP lifecycle
// writes answer what a board answers while its database is down or
// stalled — Unavailable, "database unreachable: ..." — for as long as the
// outage lasts. Reads pass: the rep learned what it acts on just before
// the database went away.
type outageStore struct {
	db.DB

	mu      sync.Mutex
	down    bool
	refused map[string]int
}

// refuse counts the call and reports whether the outage refuses it.
func (s *outageStore) refuse(call string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.refused[call]++
	}
	return s.down
}

func (s *outageStore) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *outageStore) refusedCalls(call string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[call]
}

func unreachable(what string) error {
	return models.NewError(models.Error_Unavailable, "database unreachable: %s: read tcp 127.0.0.1:5432: i/o timeout", what)
}

func (s *outageStore) StartActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller, netInfo *models.NetInfo, routable bool) (*models.ActualLRP, error) {
	if s.refuse("start") {
		return nil, unreachable("start actual lrp")
	}
	return s.DB.StartActualLRP(ctx, key, caller, netInfo, routable)
}

func (s *outageStore) CrashActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller, reason string) (*models.ActualLRP, error) {
	if s.refuse("crash") {
		return nil, unreachable("crash actual lrp")
	}
	return s.DB.CrashActualLRP(ctx, key, caller, reason)
}

func (s *outageStore) RemoveActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) error {
	if s.refuse("remove") {
		return unreachable("remove actual lrp")
	}
	return s.DB.RemoveActualLRP(ctx, key, caller)
}

// An Unavailable answer means the board decided nothing: the rep tries the
// call again rather than take it as the board's word. A crash reported
// while the database restarts was dropped before, leaving the row RUNNING
// and routable on a dead process for good (the e2e chaos spec "the
// board's database restarted and frozen under rollouts" showed it).
var _ = Describe("the agent, while its board cannot reach its database", func() {
	const (
		stopGracePeriod = 200 * time.Millisecond
		// unroutableRetryTimeout is short of the outages below: a board
		// that answers Unavailable is not a board gone for good.
		unroutableRetryTimeout = time.Second
	)
	var (
		store *outageStore
		exe   *fakeExecutor
		row   *models.ActualLRP
	)

	BeforeEach(func() {
		ctx := context.Background()
		database, err := testdb.Create(testdb.SQLite)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)
		conn, err := sqldb.Open(ctx, testdb.SQLite, database.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		Expect(migrations.Up(ctx, conn, testdb.SQLite)).To(Succeed())
		store = &outageStore{DB: sqldb.New(conn, testdb.SQLite), refused: map[string]int{}}
		server := httptest.NewServer(handlers.New(lagertest.NewTestLogger("board"), store, nil))
		DeferCleanup(server.Close)

		// What the agent tells the board, and when, is all these specs
		// look at: the executor is a fake, whose instances crash when told.
		const cellID = "cell-a"
		exe = newFakeExecutor()
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{
				CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
			},
			Board:                  client.New(server.URL),
			CellClient:             client.NewCellClient(server.URL, cellID),
			Executor:               exe,
			PollInterval:           100 * time.Millisecond,
			BulkSyncInterval:       time.Hour,
			StopGracePeriod:        stopGracePeriod,
			UnroutableRetryTimeout: unroutableRetryTimeout,
			Logger:                 lagertest.NewTestLogger("rep"),
		})
		Expect(err).NotTo(HaveOccurred())
		signals, ready, done := make(chan os.Signal, 1), make(chan struct{}), make(chan error, 1)
		go func() { done <- agent.Run(signals, ready) }()
		<-ready
		DeferCleanup(func() {
			store.setDown(false)
			signals <- os.Interrupt
			Eventually(done).Should(Receive(BeNil()))
		})

		def := reptest.HelloDefinition(reptest.HTTPCheck())
		def.DefinitionId = ""
		_, err = store.DesireLRP(ctx, &models.DesiredLRP{ProcessGuid: "hello", Domain: "rep-suite", Instances: 1, Definition: def})
		Expect(err).NotTo(HaveOccurred())
		placed := store.rows("hello")[0]
		result, err := store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Place: []convergence.Placement{{CellID: cellID, Row: versionOf(placed)}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
		Eventually(func() models.ActualLRP_State { return store.rows("hello")[0].GetState() }).Should(Equal(models.ActualLRP_RUNNING))
		row = store.rows("hello")[0]
	})

	It("reports a crash that happened during the outage once the board can write it", func() {
		store.setDown(true)
		Expect(exe.Crash(row.GetInstanceGuid(), "killed by signal 9")).To(BeTrue())
		Eventually(func() int { return store.refusedCalls("crash") }).Should(BeNumerically(">=", 3), "the crash call is tried again")
		Expect(store.rows("hello")[0].GetState()).To(Equal(models.ActualLRP_RUNNING), "nothing was written yet")

		store.setDown(false)
		Eventually(func() *models.ActualLRP { return store.rows("hello")[0] }).Should(And(
			HaveField("State", models.ActualLRP_CRASHED),
			HaveField("CrashCount", BeEquivalentTo(1)),
			HaveField("CrashReason", "killed by signal 9"),
		))
	})

	It("reports a crash whose reason holds bytes the board refuses, cleaned rather than lost", func() {
		Expect(exe.Crash(row.GetInstanceGuid(), "setup failed: boom\x00! \xff")).To(BeTrue())
		Eventually(func() *models.ActualLRP { return store.rows("hello")[0] }).Should(And(
			HaveField("State", models.ActualLRP_CRASHED),
			HaveField("CrashReason", "setup failed: boom! \uFFFD"),
		))
	})

	It("keeps a retiring instance told to stop running, and routable, until the board can mark it unroutable, however long that takes", func() {
		store.setDown(true)
		ctx := context.Background()
		result, err := store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Retire: []convergence.Retirement{{Row: versionOf(row), Stop: true}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
		Expect(exe.Running(row.GetInstanceGuid())).To(BeTrue())

		Eventually(func() int { return store.refusedCalls("start") }).Should(BeNumerically(">=", 3), "the unroutable call is tried again")
		Consistently(func() bool { return exe.Running(row.GetInstanceGuid()) }).WithTimeout(3*unroutableRetryTimeout).Should(BeTrue(),
			"the instance serves on while routers may still send it requests, past the unroutable retry timeout")
		Expect(store.rows("hello")).To(ConsistOf(And(
			HaveField("Presence", models.ActualLRP_RETIRING),
			HaveField("Routable", true),
		)))

		store.setDown(false)
		Eventually(func() []*models.ActualLRP { return store.rows("hello") }).Should(BeEmpty(), "stopped and removed")
		Eventually(exe.Instances).Should(BeEmpty())
	})
})

func (s *outageStore) rows(processGuid string) []*models.ActualLRP {
	GinkgoHelper()
	rows, err := s.ActualLRPs(context.Background(), db.ActualLRPFilter{ProcessGuid: processGuid})
	Expect(err).NotTo(HaveOccurred())
	return rows
}

func versionOf(row *models.ActualLRP) convergence.RowVersion {
	return convergence.RowVersion{
		Key:   models.ActualLRPKey{ProcessGuid: row.GetProcessGuid(), Index: row.GetIndex(), Presence: row.GetPresence()},
		State: row.GetState(), ModificationIndex: int64(row.GetModificationTag().GetIndex()),
	}
}
