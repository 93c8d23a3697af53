package runner_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("a partial snapshot under the start governor", func() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	row := func(guid, cell string, state models.ActualLRP_State, ago time.Duration) convergence.ActualRow {
		return convergence.ActualRow{ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY, State: state, CellID: cell, Since: now.Add(-ago).UnixNano()}
	}

	It("carries, per cell, the recent starts of the LRPs it leaves out, and none of those it holds", func() {
		rows := []convergence.ActualRow{
			row("api", "cell-a", models.ActualLRP_UNCLAIMED, 200*time.Millisecond),
			row("api", "cell-b", models.ActualLRP_RUNNING, 5*time.Second),
			row("db", "cell-b", models.ActualLRP_CLAIMED, 600*time.Millisecond),
			row("web", "cell-a", models.ActualLRP_UNCLAIMED, 100*time.Millisecond),
		}
		cells := []convergence.CellRow{{CellID: "cell-a"}, {CellID: "cell-b"}}
		Expect(runner.PartialStarts(rows, cells, []string{"web"}, now)).To(Equal(map[string][]int64{
			"cell-a": {now.Add(-200 * time.Millisecond).UnixNano()},
			"cell-b": {now.Add(-600 * time.Millisecond).UnixNano()},
		}), "api's start on cell-a and db's on cell-b; api's old one and web's own are not")
	})
})
