package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// A board's identity survives its restart: with the default board_id a
// board restarted on the same config takes its own convergence lease back
// at once, and one stopped with SIGTERM hands the lease over. The lease
// TTL here is 10 minutes, so that a board that had to wait for a lease to
// expire could never pass within the specs' deadlines.
var _ = Describe("Board identity across restarts", func() {
	ctx := context.Background()
	const (
		longLeaseTTL = "10m"
		heldSeries   = "corkboard_convergence_lease_held"
	)

	// settingsOn is a config for a board on a fixed port (port 0 would
	// give it a random id) with the default board id.
	settingsOn := func(port int, dataDir string) map[string]any {
		return map[string]any{
			"listen_address":        fmt.Sprintf("127.0.0.1:%d", port),
			"data_dir":              dataDir,
			"convergence_lease_ttl": longLeaseTTL,
		}
	}
	ownsLease := func(board *runningBoard) func() float64 {
		return func() float64 { return board.metric(heldSeries) }
	}

	for _, dialect := range testdb.MustDialects() {
		It("takes its own lease back at once after SIGKILL, and converges, on "+dialect, func() {
			database := newDatabase(dialect)
			settings := settingsOn(freePort(), GinkgoT().TempDir())
			first := startConvergingBoard(database, settings)
			id := boardIDOf(first)
			Eventually(ownsLease(first)).WithTimeout(convergeLimit).Should(Equal(1.0))

			// No cell yet: the instances stay unplaced until a converging
			// board places them.
			api := first.client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 2))
			Expect(err).NotTo(HaveOccurred())

			By("killing the board and starting it again with the same config")
			killed := time.Now()
			first.session.Kill()
			Eventually(first.session).WithTimeout(startupLimit).Should(gexec.Exit())
			started := time.Now()
			again := startConvergingBoard(database, settings)
			Expect(boardIDOf(again)).To(Equal(id))
			Expect(again.url).To(Equal(first.url))

			Eventually(ownsLease(again)).WithTimeout(convergeLimit).Should(Equal(1.0), "the lease lasts %s; the restarted board must not wait for it", longLeaseTTL)
			Eventually(again.session.Out).WithTimeout(convergeLimit).Should(gbytes.Say(`"bbs\.convergence\.pass\.done"`))
			passDone := firstLogTime(again, "bbs.convergence.pass.done")
			AddReportEntry(fmt.Sprintf("restart after SIGKILL (%s, lease TTL %s): start → first pass done", dialect, longLeaseTTL),
				passDone.Sub(started).Round(time.Millisecond).String())
			AddReportEntry(fmt.Sprintf("restart after SIGKILL (%s, lease TTL %s): SIGKILL → first pass done", dialect, longLeaseTTL),
				passDone.Sub(killed).Round(time.Millisecond).String())

			startCell(again, "cell-a", "z1")
			Eventually(placement(again, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-a RUNNING": 2}))
		})

		It("hands the lease and its operations' leases back on SIGTERM, so that a board with another id takes them at once, on "+dialect, func() {
			database := newDatabase(dialect)
			dataDir := GinkgoT().TempDir()
			first := startConvergingBoard(database, settingsOn(freePort(), dataDir))
			Eventually(ownsLease(first)).WithTimeout(convergeLimit).Should(Equal(1.0))

			// A rollout that stays under way: no cell runs its instances.
			api := first.client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			v2 := lrpSpec("web", "apps", 2).Definition
			v2.DefinitionId, v2.Action = "v2", &models.RunAction{Path: "/bin/web-v2"}
			_, opID, err := api.UpdateDesiredLRPWithOperation(ctx, "web", &models.DesiredLRPUpdate{Definition: v2})
			Expect(err).NotTo(HaveOccurred())
			leaseOwner := func(board *runningBoard) func() string {
				return func() string {
					op, err := board.client().Operation(ctx, opID)
					Expect(err).NotTo(HaveOccurred())
					return op.GetLeaseOwner()
				}
			}
			Eventually(leaseOwner(first)).WithTimeout(convergeLimit).Should(Equal(boardIDOf(first)))

			first.stop(syscall.SIGTERM)
			out := string(first.session.Out.Contents())
			Expect(out).To(ContainSubstring(`"bbs.convergence.handed-over"`))
			Expect(out).To(ContainSubstring(`"bbs.convergence.lease.released"`))

			second := startConvergingBoard(database, settingsOn(freePort(), dataDir))
			Expect(boardIDOf(second)).NotTo(Equal(boardIDOf(first)))
			Eventually(ownsLease(second)).WithTimeout(convergeLimit).Should(Equal(1.0), "the lease lasts %s unless handed back", longLeaseTTL)
			Eventually(leaseOwner(second)).WithTimeout(convergeLimit).Should(Equal(boardIDOf(second)),
				"the operation's lease lasts %s unless handed back", longLeaseTTL)
			op, err := second.client().Operation(ctx, opID)
			Expect(err).NotTo(HaveOccurred())
			var history []string
			for _, line := range op.GetHistory() {
				history = append(history, line.GetMessage())
			}
			Expect(history).To(ContainElements("released by board "+boardIDOf(first)+": it stopped", "taken up by board "+boardIDOf(second)))
		})

		It("gives two boards on one host, listening on different addresses, different ids: one converges, on "+dialect, func() {
			database := newDatabase(dialect)
			dataDir := GinkgoT().TempDir()
			first := startConvergingBoard(database, settingsOn(freePort(), dataDir))
			Eventually(ownsLease(first)).WithTimeout(convergeLimit).Should(Equal(1.0))
			second := startConvergingBoard(database, settingsOn(freePort(), dataDir))
			Expect(boardIDOf(second)).NotTo(Equal(boardIDOf(first)))

			first.waitForPasses(3)
			Expect(ownsLease(first)()).To(Equal(1.0))
			Expect(ownsLease(second)()).To(Equal(0.0))
			Expect(second.fullPasses()).To(Equal(0.0))
		})
	}

	It("refuses a second start of a running board before it asks for the lease its id shares", func() {
		database := newDatabase(testdb.SQLite)
		settings := settingsOn(freePort(), GinkgoT().TempDir())
		first := startConvergingBoard(database, settings)
		id := boardIDOf(first)
		Eventually(ownsLease(first)).WithTimeout(convergeLimit).Should(Equal(1.0))

		path := convergingConfigFile(database, settings)
		duplicate, err := gexec.Start(exec.Command(bbsPath, "-config", path), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(duplicate).WithTimeout(startupLimit).Should(gexec.Exit(1))
		Expect(duplicate.Err).To(gbytes.Say("listen on " + regexp.QuoteMeta(settings["listen_address"].(string))))
		Expect(string(duplicate.Out.Contents())).To(ContainSubstring(`"board_id":"` + id + `"`))
		Expect(string(duplicate.Out.Contents())).NotTo(ContainSubstring(`"bbs.convergence.`), "it never ran a converger under the shared id")

		Expect(leaseOwner(database)).To(Equal(id))
		Expect(ownsLease(first)()).To(Equal(1.0))
	})
})

// freePort is a loopback port nobody listens on at the moment.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var boardIDLine = regexp.MustCompile(`"message":"bbs\.board","data":\{"board_id":"([^"]+)"`)

// boardIDOf is the board id the board logged at start.
func boardIDOf(board *runningBoard) string {
	GinkgoHelper()
	match := boardIDLine.FindSubmatch(board.session.Out.Contents())
	Expect(match).NotTo(BeNil(), "no board id in the log:\n%s", board.session.Out.Contents())
	return string(match[1])
}

// firstLogTime is the timestamp of the board's first log line with
// message.
func firstLogTime(board *runningBoard, message string) time.Time {
	GinkgoHelper()
	for _, line := range strings.Split(string(board.session.Out.Contents()), "\n") {
		var entry struct {
			Timestamp time.Time `json:"timestamp"`
			Message   string    `json:"message"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Message == message {
			return entry.Timestamp
		}
	}
	Fail("no " + message + " line in the board's log")
	return time.Time{}
}

// leaseOwner reads who owns the convergence lease in the database.
func leaseOwner(database *testdb.Database) string {
	GinkgoHelper()
	conn, err := sqldb.Open(context.Background(), database.Dialect, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	var owner string
	Expect(conn.QueryRow("SELECT owner FROM leases WHERE name = 'convergence'").Scan(&owner)).To(Succeed())
	return owner
}
