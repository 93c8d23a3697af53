package main_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// cork rollout plan against a board with the convergence planner, hello's
// 4 instances running on two simulated cells, one a zone.
var _ = Describe("cork rollout plan", func() {
	var board string

	BeforeEach(func() {
		store := openStore()
		planner := runner.NewRolloutPlanner(store, runner.RunnerConfig{})
		board = serve(store, handlers.WithRolloutPlanner(planner.Plan))
		Expect(runCork(board, "", "desire", fixture("hello-local.json")).code).To(Equal(0))
		ctx := context.Background()
		for i, cellID := range []string{"cell-a", "cell-b"} {
			Expect(store.RegisterCell(ctx, &models.Cell{
				CellId: cellID, RepUrl: "http://10.0.0.5:1800", Zone: fmt.Sprintf("z%d", i+1),
				Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
			}, time.Hour)).To(Succeed())
		}
		rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "hello"})
		Expect(err).NotTo(HaveOccurred())
		Expect(rows).To(HaveLen(4))
		writes := &convergence.ConvergenceWrites{}
		for _, row := range rows {
			writes.Place = append(writes.Place, convergence.Placement{
				Row: convergence.RowVersion{
					Key:   models.ActualLRPKey{ProcessGuid: "hello", Index: row.GetIndex(), Presence: models.ActualLRP_ORDINARY},
					State: row.GetState(), ModificationIndex: int64(row.GetModificationTag().GetIndex()),
				},
				CellID: []string{"cell-a", "cell-b"}[row.GetIndex()%2],
			})
		}
		applied, err := store.ApplyConvergence(ctx, writes)
		Expect(err).NotTo(HaveOccurred())
		Expect(applied.Applied).To(Equal(4))
		for index := range int32(4) {
			cell := client.NewCellClient(board, []string{"cell-a", "cell-b"}[index%2])
			instance := client.Instance{ProcessGuid: "hello", Index: index, InstanceGuid: fmt.Sprintf("ig-%d", index)}
			_, err := cell.ClaimActualLRP(ctx, instance)
			Expect(err).NotTo(HaveOccurred())
			_, err = cell.StartActualLRP(ctx, instance, &models.NetInfo{Address: "10.0.0.5"}, true)
			Expect(err).NotTo(HaveOccurred())
		}
	})

	cork := func(args ...string) result { return runCork(board, "", args...) }

	It("prints the rollout pass by pass for people, and changes nothing", func() {
		before := cork("get", "hello")
		r := cork("rollout", "plan", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2",
			"--max-surge", "2", "--ready-after", "10s", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		active := strings.Fields(r.lines()[0])[1]
		Expect(r.lines()).To(Equal([]string{
			"hello: " + active + " → v2, 4 instances, max_surge 2, max_unavailable 0, min_ready 0s, ready after 10s",
			"+0s     start 0(cell-a/z1) 1(cell-b/z2)  available 4/4  surged 2  updated 0/4",
			"+10s    start 2(cell-a/z1) 3(cell-b/z2)  stop 0 1  available 4/4  surged 2  updated 2/4",
			"+20s    stop 2 3  available 4/4  surged 0  updated 4/4",
			"projected: 20s",
		}))
		Expect(cork("get", "hello").stdout).To(Equal(before.stdout), "the LRP is as it was: no new definition, strategy or tag")
		Expect(cork("definitions", "hello").lines()).To(HaveLen(1), "no definition stored")
	})

	It("prints the plan as one JSON line, and one that does not complete says why", func() {
		r := cork("rollout", "plan", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2", "--target-percent", "50")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.lines()).To(HaveLen(1))
		var plan models.RolloutPlan
		parseLines(r, &plan)
		Expect(plan.GetToDefinitionId()).To(Equal("v2"))
		Expect(plan.GetCompletes()).To(BeFalse())
		Expect(plan.GetStoppedReason()).To(Equal("staged phase holding at 50% (2 of 4 on v2): promote to go on"))
		Expect(plan.GetPasses()).NotTo(BeEmpty())
		Expect(plan.GetPasses()[0].GetReasons()).NotTo(BeEmpty(), "the planner's reasons are in the JSON")
	})

	It("refuses a plan without a definition, and a negative --ready-after, as usage errors", func() {
		r := cork("rollout", "plan", "hello")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(ContainSubstring("--definition"))
		r = cork("rollout", "plan", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--ready-after", "-1s")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(ContainSubstring("--ready-after"))
		r = cork("rollout", "plan", "nobody", "--definition", fixture("hello-local-v2-definition.json"))
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(HavePrefix("cork: ResourceNotFound: "))
	})
})
