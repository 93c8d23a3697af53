package main_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
)

// The happy path, a log fetched from a real rep, is in e2e/; these are
// the ways cork logs fails before or while asking the rep.
var _ = Describe("cork logs", func() {
	var (
		board string
		store *sqldb.SQLDB
	)

	BeforeEach(func() {
		board, store = startBoardWithStore(nil)
	})

	// fail runs cork logs and expects the exit code and one error line
	// containing want.
	fail := func(code int, want string, args ...string) {
		GinkgoHelper()
		r := runCork(board, "", append([]string{"logs"}, args...)...)
		Expect(r.code).To(Equal(code), "stdout %q stderr %q", r.stdout, r.stderr)
		Expect(r.stdout).To(BeEmpty())
		Expect(r.stderr).To(HavePrefix("cork: "))
		Expect(r.stderr).To(ContainSubstring(want))
	}

	It("refuses a missing or malformed GUID/INDEX and a bad -n as usage errors", func() {
		fail(2, "GUID/INDEX")
		fail(2, `want GUID/INDEX, e.g. hello/0, got "hello"`, "hello")
		fail(2, `got "hello/x"`, "hello/x")
		fail(2, `got "hello/-1"`, "hello/-1")
		fail(2, `want GUID/INDEX, e.g. hello/0, got "/0"`, "/0")
		fail(2, "-n must be from 1 to 10000, got 0", "hello/0", "-n", "0")
	})

	It("says so when the board has no such instance", func() {
		fail(1, "hello/0: no such instance on the board", "hello/0")
	})

	It("says so when the instance is not claimed by a cell yet", func() {
		r := runCork(board, "", "desire", fixture("hello-local.json"))
		Expect(r.code).To(Equal(0), r.stderr)
		fail(1, "hello/2 is UNCLAIMED and not claimed by any cell yet: it has no log", "hello/2")
	})

	registerCell := func(cellID, repURL string) { GinkgoHelper(); registerCellOn(store, cellID, repURL) }
	claimOn := func(cellID string, index int32, instanceGuid string) *client.CellClient {
		GinkgoHelper()
		return claimOnCell(store, board, cellID, index, instanceGuid)
	}

	It("names the cell when its rep cannot be reached", func() {
		r := runCork(board, "", "desire", fixture("hello-local.json"))
		Expect(r.code).To(Equal(0), r.stderr)
		registerCell("cell-a", deadURL())
		claimOn("cell-a", 1, "ig-1")

		fail(1, "hello/1: asking the rep of cell cell-a:", "hello/1")
	})

	Context("when the instance crashed, so its row names no cell", func() {
		var exe *executor.Executor

		BeforeEach(func() {
			r := runCork(board, "", "desire", fixture("hello-local.json"))
			Expect(r.code).To(Equal(0), r.stderr)

			exe = startRep(store, board, "cell-a", 40000)
			// A cell whose rep is gone is no reason to fail.
			registerCell("cell-b", deadURL())
		})

		It("finds the log its rep keeps and prints it, headed by how the instance ended", func() {
			cell := claimOn("cell-a", 1, "ig-1")
			_, err := exe.Run(executor.InstanceSpec{
				ProcessGuid: "hello", Index: 1, InstanceGuid: "ig-1",
				Definition: &models.LRPDefinition{
					DefinitionId: "v1",
					Action:       &models.RunAction{Path: "sh", Args: []string{"-c", "echo last words before the crash; exit 3"}},
				},
			})
			Expect(err).NotTo(HaveOccurred())
			Eventually(exe.Events()).WithTimeout(30 * time.Second).Should(Receive(HaveField("Kind", executor.Crashed)))
			_, err = cell.CrashActualLRP(context.Background(), client.Instance{ProcessGuid: "hello", Index: 1, InstanceGuid: "ig-1"}, "exited with code 3")
			Expect(err).NotTo(HaveOccurred())

			r := runCork(board, "", "logs", "hello/1", "-n", "20")
			Expect(r.code).To(Equal(0), r.stderr)
			Expect(r.lines()[0]).To(MatchRegexp(`^--- previous instance ig-1 of hello/1, ended \S+: crashed: exited with code 3 ---$`))
			Expect(r.stdout).To(ContainSubstring("last words before the crash"))
		})

		It("says the instance crashed when no cell keeps a log of it", func() {
			cell := claimOn("cell-a", 2, "ig-2")
			_, err := cell.CrashActualLRP(context.Background(), client.Instance{ProcessGuid: "hello", Index: 2, InstanceGuid: "ig-2"}, "exited with code 9")
			Expect(err).NotTo(HaveOccurred())

			fail(1, "hello/2 is CRASHED (exited with code 9) and no cell keeps a log of it; not every cell could be asked: asking the rep of cell cell-b:", "hello/2")
		})
	})
})
