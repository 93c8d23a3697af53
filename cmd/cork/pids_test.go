package main_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
)

var _ = Describe("cork actual-lrps -o wide", func() {
	var (
		board string
		store *sqldb.SQLDB
	)

	BeforeEach(func() {
		board, store = startBoardWithStore(nil)
		r := runCork(board, "", "desire", fixture("hello-local.json"))
		Expect(r.code).To(Equal(0), r.stderr)
	})

	// wideRows runs cork actual-lrps -o wide and returns its header and
	// its rows by INDEX, each a map of column to value.
	wideRows := func(args ...string) (result, []string, map[string]map[string]string) {
		GinkgoHelper()
		r := runCork(board, "", append([]string{"actual-lrps", "--guid", "hello", "-o", "wide"}, args...)...)
		Expect(r.code).To(Equal(0), r.stderr)
		lines := r.lines()
		Expect(lines).NotTo(BeEmpty())
		header := strings.Fields(lines[0])
		rows := map[string]map[string]string{}
		for _, line := range lines[1:] {
			fields := strings.Fields(line)
			row := map[string]string{}
			// Every column but REASON (last, free text) is one word.
			for i, h := range header[:len(header)-1] {
				row[h] = fields[i]
			}
			rows[row["INDEX"]] = row
		}
		return r, header, rows
	}

	It("shows the pid each instance's rep reports, - where none runs, ? where the rep does not answer", func() {
		exe := startRep(store, board, "cell-a", 40100)
		registerCellOn(store, "cell-b", deadURL())

		claimOnCell(store, board, "cell-a", 0, "ig-0")
		_, err := exe.Run(executor.InstanceSpec{
			ProcessGuid: "hello", Index: 0, InstanceGuid: "ig-0",
			Definition: &models.LRPDefinition{
				DefinitionId: "v1",
				Action:       &models.RunAction{Path: "sleep", Args: []string{"60"}},
			},
		})
		Expect(err).NotTo(HaveOccurred())
		var pid int
		Eventually(func() int {
			for _, st := range exe.Instances() {
				if st.InstanceGuid == "ig-0" {
					pid = st.Pid
				}
			}
			return pid
		}).WithTimeout(10 * time.Second).Should(BeNumerically(">", 0))
		// Claimed on cell-a, which runs nothing for it.
		claimOnCell(store, board, "cell-a", 1, "ig-1")
		// Claimed on cell-b, whose rep is gone.
		claimOnCell(store, board, "cell-b", 2, "ig-2")

		r, header, rows := wideRows()
		Expect(header).To(Equal([]string{"PROCESS_GUID", "INDEX", "PRESENCE", "STATE", "DEFINITION_ID", "CELL_ID", "ADDRESS",
			"ROUTES", "ROUTABLE", "OCCUPIED", "CRASHES", "SINCE", "PID", "REASON"}))
		Expect(rows["0"]).To(HaveKeyWithValue("PID", strconv.Itoa(pid)))
		// The pid is the instance's process, alive: the action itself, or,
		// when the rep isolates instances (as root), their init.
		Expect(os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")).To(Or(HavePrefix("sleep\x00"), HavePrefix("corkboard-instance-init\x00")))
		Expect(rows["1"]).To(HaveKeyWithValue("PID", "-"))
		Expect(rows["2"]).To(HaveKeyWithValue("PID", "?"))
		Expect(rows["3"]).To(HaveKeyWithValue("PID", "-")) // unclaimed: no cell
		Expect(r.stderr).To(MatchRegexp(`^cork: warning: no pids from cell cell-b: asking its rep: .*\n$`))

		// -o pid: the pids alone, one a line, for scripts; rows without
		// one are left out.
		r = runCork(board, "", "actual-lrps", "--guid", "hello", "-o", "pid")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(Equal(strconv.Itoa(pid) + "\n"))
	})

	It("asks no rep and no cell list when no row names a cell", func() {
		// Neither rep would answer: only rows without a cell keep this green.
		registerCellOn(store, "cell-b", deadURL())
		r, _, rows := wideRows()
		Expect(rows).To(HaveLen(4))
		for index, row := range rows {
			Expect(row).To(HaveKeyWithValue("PID", "-"), "index %s", index)
		}
		Expect(r.stderr).To(BeEmpty())
	})

	It("is for actual-lrps only", func() {
		r := runCork(board, "", "list", "-o", "wide")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(ContainSubstring("-o wide is for actual-lrps only"))
		r = runCork(board, "", "actual-lrps", "-o", "yaml")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(ContainSubstring(`-o must be json, table, wide, address or pid, not "yaml"`))
	})
})

var _ = Describe("cork actual-lrps -o address", func() {
	It("prints host:port of each started instance's first port, a line each", func() {
		board, store := startBoardWithStore(nil)
		Expect(runCork(board, "", "desire", fixture("hello-local.json")).code).To(Equal(0))
		registerCellOn(store, "cell-a", deadURL())
		cell := claimOnCell(store, board, "cell-a", 1, "ig-1")
		claimOnCell(store, board, "cell-a", 2, "ig-2") // claimed, no address yet
		_, err := cell.StartActualLRP(context.Background(), client.Instance{ProcessGuid: "hello", Index: 1, InstanceGuid: "ig-1"},
			&models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}, {ContainerPort: 9090, HostPort: 61002}}}, true)
		Expect(err).NotTo(HaveOccurred())

		r := runCork(board, "", "actual-lrps", "--guid", "hello", "-o", "address")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(Equal("10.0.0.5:61001\n"))
		r = runCork(board, "", "list", "-o", "address")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(ContainSubstring("-o address is for actual-lrps only"))
	})
})

var _ = Describe("cork wait", func() {
	It("waits until every index runs the active definition, and says what is in the way when it gives up", func() {
		board, store := startBoardWithStore(nil)
		Expect(runCork(board, "", "desire", fixture("hello-local.json")).code).To(Equal(0))
		r := runCork(board, "", "wait", "hello", "--within", "1s")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(MatchRegexp(`^cork: hello: not settled within 1s: index 0 is UNCLAIMED\n$`))

		registerCellOn(store, "cell-a", deadURL())
		desired, err := store.DesiredLRPByProcessGuid(context.Background(), "hello")
		Expect(err).NotTo(HaveOccurred())
		for i := range desired.GetInstances() {
			guid := "ig-" + strconv.Itoa(int(i))
			cell := claimOnCell(store, board, "cell-a", i, guid)
			_, err := cell.StartActualLRP(context.Background(), client.Instance{ProcessGuid: "hello", Index: i, InstanceGuid: guid},
				&models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000 + uint32(i)}}}, true)
			Expect(err).NotTo(HaveOccurred())
		}
		r = runCork(board, "", "wait", "hello", "--within", "10s")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(Equal(fmt.Sprintf("hello: %d instances running %s\n", desired.GetInstances(), desired.GetActiveDefinitionId())))

		r = runCork(board, "", "wait", "nobody")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("ResourceNotFound"))
	})
})
