package main_test

import (
	"context"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
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
		r := runCork(board, "", "desire", fixture("hello.json"))
		Expect(r.code).To(Equal(0), r.stderr)
		fail(1, "hello/2 is UNCLAIMED and not claimed by any cell yet: it has no log", "hello/2")
	})

	It("names the cell when its rep cannot be reached", func() {
		r := runCork(board, "", "desire", fixture("hello.json"))
		Expect(r.code).To(Equal(0), r.stderr)
		// A rep URL where nothing listens.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		repURL := "http://" + l.Addr().String()
		Expect(l.Close()).To(Succeed())
		ctx := context.Background()
		Expect(store.RegisterCell(ctx, &models.Cell{
			CellId: "cell-a", RepUrl: repURL, Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
		}, time.Minute)).To(Succeed())
		rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "hello", Index: indexPtr(1)})
		Expect(err).NotTo(HaveOccurred())
		Expect(rows).To(HaveLen(1))
		version := db.RowVersion{
			Key:   db.ActualLRPKey{ProcessGuid: "hello", Index: 1, Presence: models.ActualLRP_ORDINARY},
			State: rows[0].GetState(), ModificationIndex: int64(rows[0].GetModificationTag().GetIndex()),
		}
		result, err := store.ApplyConvergence(ctx, &db.ConvergenceWrites{Place: []db.Placement{{Row: version, CellID: "cell-a"}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
		cell := client.NewCellClient(board, "cell-a")
		_, err = cell.ClaimActualLRP(ctx, client.Instance{ProcessGuid: "hello", Index: 1, InstanceGuid: "ig-1"})
		Expect(err).NotTo(HaveOccurred())

		fail(1, "hello/1: asking the rep of cell cell-a:", "hello/1")
	})
})

func indexPtr(i int32) *int32 { return &i }
