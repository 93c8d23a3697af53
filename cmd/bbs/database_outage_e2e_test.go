package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// stallableServer is what the spec needs of a private database server
// (testdb.PrivatePostgres, testdb.PrivateMariaDB).
type stallableServer interface {
	AdminDSN() string
	Freeze() error
	Thaw() error
	Stop() error
	Start() error
	Close() error
}

// privateServerKind is one kind of private server: its dialect, how to
// start one, and the error that start wraps when the machine lacks the
// server binaries.
type privateServerKind struct {
	dialect    string
	start      func() (stallableServer, error)
	noBinaries error
}

// stallableServers are the private servers the fault specs run on, one
// per server dialect.
var stallableServers = []privateServerKind{
	{testdb.Postgres, func() (stallableServer, error) {
		server, err := testdb.StartPrivatePostgres()
		if err != nil {
			return nil, err // not a nil *PrivatePostgres in a non-nil interface
		}
		return server, nil
	}, testdb.ErrNoPostgresBinaries},
	{testdb.MySQL, func() (stallableServer, error) {
		server, err := testdb.StartPrivateMariaDB()
		if err != nil {
			return nil, err
		}
		return server, nil
	}, testdb.ErrNoMariaDBBinaries},
}

// A database that stalls: a private server, frozen with SIGSTOP (it keeps
// accepting connections and answers nothing), for longer than the cells'
// presence TTL, then thawed. The shared servers are never touched.
var _ = Describe("A stalled database", Label("chaos"), func() {
	for _, s := range stallableServers {
		if !fullChaos() && s.dialect != testdb.Postgres {
			continue // make test freezes Postgres only
		}
		It("fails calls as Unavailable instead of hanging, says so on ping and /ready, and after it keeps every instance where it runs on "+s.dialect, func() {
			server, database := startPrivateDatabase(s)

			const presenceTTL = 2 * time.Second
			board := startConvergingBoard(database, map[string]any{
				"database_timeout":  "1s",
				"cell_presence_ttl": presenceTTL.String(),
			})
			api := board.client()
			ctx := context.Background()
			cells := []interface {
				Stops() []*models.ReportedInstance
			}{startCell(board, "cell-1", "z1"), startCell(board, "cell-2", "z2")}
			_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 4))
			Expect(err).NotTo(HaveOccurred())
			runningGuids := func() map[int32]string {
				guids := map[int32]string{}
				for _, lrp := range instances(board, "web") {
					if lrp.GetPresence() == models.ActualLRP_ORDINARY && lrp.GetState() == models.ActualLRP_RUNNING {
						guids[lrp.GetIndex()] = lrp.GetInstanceGuid()
					}
				}
				return guids
			}
			Eventually(runningGuids).WithTimeout(convergeLimit).Should(HaveLen(4))
			before := runningGuids()

			Expect(server.Freeze()).To(Succeed())
			frozen := time.Now()

			By("failing a read, a write and ping as Unavailable")
			_, err = api.DesiredLRPByProcessGuid(ctx, "web")
			expectUnavailable(err)
			_, err = api.DesireLRP(ctx, lrpSpec("worker", "apps", 1))
			expectUnavailable(err)
			_, err = api.Ping(ctx)
			expectUnavailable(err)
			status, body := getReady(board)
			Expect(status).To(Equal(http.StatusServiceUnavailable))
			Expect(body).To(HavePrefix("database unreachable"))
			Eventually(func() float64 { return board.metric("corkboard_database_up") }).WithTimeout(convergeLimit).Should(BeEquivalentTo(0))

			// Frozen for well over the presence TTL: every cell's presence
			// runs out while no rep can renew it.
			time.Sleep(3*presenceTTL - time.Since(frozen))
			Expect(server.Thaw()).To(Succeed())

			By("answering again by itself")
			Eventually(func() error { _, err := api.Ping(ctx); return err }).WithTimeout(convergeLimit).Should(Succeed())
			Eventually(func() int { status, _ := getReady(board); return status }).WithTimeout(convergeLimit).Should(Equal(http.StatusOK))
			Eventually(func() float64 { return board.metric("corkboard_database_up") }).WithTimeout(convergeLimit).Should(BeEquivalentTo(1))
			Expect(board.metric("corkboard_database_outages_total")).To(BeNumerically(">=", 1))
			Expect(board.metric("corkboard_database_outage_seconds_total")).To(BeNumerically(">=", 2*presenceTTL.Seconds()))

			By("keeping every instance where it runs: no cell judged gone for the stall")
			board.waitForPasses(10)
			Consistently(runningGuids).WithTimeout(2 * presenceTTL).WithPolling(200 * time.Millisecond).Should(Equal(before))
			for _, lrp := range instances(board, "web") {
				Expect(lrp.GetPresence()).NotTo(Equal(models.ActualLRP_SUSPECT), "web/%d", lrp.GetIndex())
			}
			for _, cell := range cells {
				Expect(cell.Stops()).To(BeEmpty())
			}
			_, err = api.DesiredLRPByProcessGuid(ctx, "web")
			Expect(err).NotTo(HaveOccurred(), "nothing acknowledged is lost")
		})
	}
})

// startPrivateDatabase starts a private server of kind s and creates a
// database on it, both gone after the spec. As the testdb tests do, a
// machine without the server binaries skips, unless every database is
// required.
func startPrivateDatabase(s privateServerKind) (stallableServer, *testdb.Database) {
	GinkgoHelper()
	server, err := s.start()
	if errors.Is(err, s.noBinaries) && os.Getenv(testdb.RequireEnv) != "1" {
		Skip(err.Error())
	}
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(server.Close)
	database, err := testdb.CreateOn(s.dialect, server.AdminDSN())
	Expect(err).NotTo(HaveOccurred())
	// Dropped before the server goes (cleanups run last-first).
	DeferCleanup(database.Drop)
	return server, database
}

func expectUnavailable(err error) {
	GinkgoHelper()
	var modelErr *models.Error
	Expect(errors.As(err, &modelErr)).To(BeTrue(), "want a models.Error, got %v", err)
	Expect(modelErr.GetType()).To(Equal(models.Error_Unavailable), "%v", err)
	Expect(modelErr.GetMessage()).To(ContainSubstring("database unreachable"))
}

func getReady(board *runningBoard) (int, string) {
	GinkgoHelper()
	resp, err := http.Get(board.url + "/ready")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}
