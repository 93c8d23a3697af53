package simcell_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/internal/boardtest"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/models"
)

// claimBoard is the cell specs' board (see boardtest.MeddlingBoard),
// whose claims may answer Unavailable (see outageClaims).
type claimBoard struct {
	*boardtest.MeddlingBoard

	mu sync.Mutex
	// unavailableClaims is how many claims are still to be answered
	// Unavailable; claimGuids are the instance guids every claim named.
	unavailableClaims int
	claimGuids        []string
}

// outageClaims is the board's store with claims that answer what a board
// whose database is away answers, as many times as the board says.
type outageClaims struct {
	db.DB
	board *claimBoard
}

func (s outageClaims) ClaimActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) (*models.ActualLRP, error) {
	s.board.mu.Lock()
	s.board.claimGuids = append(s.board.claimGuids, caller.InstanceGuid)
	refuse := s.board.unavailableClaims > 0
	if refuse {
		s.board.unavailableClaims--
	}
	s.board.mu.Unlock()
	if refuse {
		return nil, models.NewError(models.Error_Unavailable, "database unreachable: claim actual lrp: read tcp 127.0.0.1:5432: i/o timeout")
	}
	return s.DB.ClaimActualLRP(ctx, key, caller)
}

func startClaimBoard() *claimBoard {
	GinkgoHelper()
	b := &claimBoard{}
	b.MeddlingBoard = boardtest.StartMeddlingBoard(func(store db.DB) db.DB { return outageClaims{DB: store, board: b} })
	return b
}

// rollUnderTheCell does to web/0 what a rolling update does to a row
// that serves nothing (UNCLAIMED or CLAIMED): it moves it onto the new
// definition (--version 2) in place, and places it again, here on the
// same cell.
func (b *claimBoard) rollUnderTheCell(cellID string) {
	defer GinkgoRecover()
	ctx := context.Background()
	updated, err := b.Store.UpdateDesiredLRP(ctx, "web", &models.DesiredLRPUpdate{
		Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "/bin/web", Args: []string{"--version", "2"}}, MemoryMb: 64},
	})
	Expect(err).NotTo(HaveOccurred())
	b.Redefine("web", 0, updated.GetActiveDefinitionId())
	b.Place("web", 0, cellID)
}

// runsItsRowText is what rowAndCell says when the cell runs the RUNNING
// instance the row of index 0 names, on the row's definition.
const runsItsRowText = "the cell runs the RUNNING instance its row names"

// rowAndCell compares the board's row of web/0 with what the cell runs at
// index 0: runsItsRowText when they agree, else both, as "row <state>
// <definition> <instance> / cell <definition> <instance>" (the row part
// "none" when there is no row, the cell part "nothing" when it runs
// nothing there).
func rowAndCell(board *claimBoard, cell *simcell.Cell) func() string {
	return func() string {
		row := board.Row("web", 0)
		onCell := "nothing"
		for _, instance := range cell.Running() {
			if instance.Index != 0 {
				continue
			}
			if row.GetState() == models.ActualLRP_RUNNING && instance.InstanceGuid == row.GetInstanceGuid() && instance.DefinitionID == row.GetDefinitionId() {
				return runsItsRowText
			}
			onCell = fmt.Sprintf("%s %s", instance.DefinitionID, instance.InstanceGuid)
		}
		if row == nil {
			return "row none / cell " + onCell
		}
		return fmt.Sprintf("row %s %s %s / cell %s", row.GetState(), row.GetDefinitionId(), row.GetInstanceGuid(), onCell)
	}
}

var _ = Describe("A simulated cell claiming", func() {
	const (
		cellID         = "cell-1"
		reportInterval = 20 * time.Millisecond
	)
	var (
		board *claimBoard
		cell  *simcell.Cell
	)

	BeforeEach(func() {
		board = startClaimBoard()
		_, err := board.Store.DesireLRP(context.Background(), &models.DesiredLRP{
			ProcessGuid: "web", Domain: "apps", Instances: 1,
			Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "/bin/web", Args: []string{"--version", "1"}}, MemoryMb: 64},
		})
		Expect(err).NotTo(HaveOccurred())
	})

	start := func() {
		GinkgoHelper()
		var err error
		cell, err = simcell.Start(context.Background(), board.URL, simcell.Config{
			Cell:           &models.Cell{CellId: cellID, Zone: "z1", Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10}},
			ReportInterval: reportInterval,
			Logf:           func(format string, args ...any) { fmt.Fprintf(GinkgoWriter, format+"\n", args...) },
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cell.Stop)
		board.Place("web", 0, cellID)
	}

	// The instance the row names, RUNNING on the definition the row has,
	// is the one the cell runs: the row is not a ghost.
	runsItsRow := func() {
		GinkgoHelper()
		Eventually(rowAndCell(board, cell)).WithTimeout(5 * time.Second).Should(Equal(runsItsRowText))
		Consistently(rowAndCell(board, cell)).WithTimeout(10*reportInterval).Should(Equal(runsItsRowText),
			"ten reports later, the cell still runs the instance the row names")
	}

	It("runs the definition of the row it claimed when a rolling update moved the row to another since its assignment", func() {
		board.Meddle(models.RouteClaimActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		runsItsRow()
		Expect(board.Row("web", 0).GetDefinitionId()).NotTo(Equal("v1"), "the rolling update moved the row on")
	})

	It("stops the instance and removes its row when its start finds the row moved to another definition", func() {
		board.Meddle(models.RouteStartActualLRP, func() { board.rollUnderTheCell(cellID) }, false)
		start()

		// Nothing converges here to place the index again: the row is gone
		// for good, rather than RUNNING on the new definition with nothing
		// behind it.
		Eventually(rowAndCell(board, cell)).WithTimeout(5 * time.Second).Should(Equal("row none / cell nothing"))
		Consistently(rowAndCell(board, cell)).WithTimeout(10 * reportInterval).Should(Equal("row none / cell nothing"))
	})

	It("claims again, under the same instance guid, while the board answers Unavailable, as the rep's agent does", func() {
		board.mu.Lock()
		board.unavailableClaims = 2
		board.mu.Unlock()
		start()

		runsItsRow()
		board.mu.Lock()
		defer board.mu.Unlock()
		Expect(board.claimGuids).To(HaveLen(3), "two claims answered Unavailable, then one the board applied")
		Expect(board.claimGuids).To(HaveEach(board.claimGuids[0]), "an Unavailable answer decided nothing: the same instance claims again")
	})

	It("claims again, under the same instance guid, when the claim's answer was lost after the board applied it", func() {
		board.Meddle(models.RouteClaimActualLRP, nil, true)
		start()

		runsItsRow()
		Expect(board.Count(models.RouteClaimActualLRP)).To(BeNumerically(">=", 2), "the first claim's answer was lost")
	})
})
