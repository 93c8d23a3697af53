package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// A rollout plan scenario is a testdata/rollout_plan/*.txt file: a state
// in the scenario format (doc.go), an "update" line, "----", and the plan
// as `cork rollout plan` prints it, with each pass's reasons. The update
// line's attributes: definition (the new id, none: no definition),
// memory, disk, surge, unavailable, min_ready, instances, target (a staged
// target percent) and ready_after.
const rolloutPlanDir = "testdata/rollout_plan"

var requiredRolloutPlans = []string{
	"serial_default",
	"serial_ready_after_0",
	"surge_25_percent",
	"unavailable_1",
	"no_room_for_surge",
	"staged_holds",
	"no_definition_change",
	"min_ready",
	"targeted_other_lrps_fill_a_cell",
}

type rolloutPlanScenario struct {
	scenario *scenario
	dryRun   convergence.DryRun
	// state is the text above the separator, kept for -update.
	state string
}

func loadRolloutPlan(path string) *rolloutPlanScenario {
	text, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	state, expected, _ := strings.Cut(string(text), "\n"+scenarioSeparator+"\n")
	var lines []string
	var updateLine []string
	for _, line := range strings.Split(state, "\n") {
		fields, err := splitFields(line)
		Expect(err).NotTo(HaveOccurred(), path)
		if len(fields) > 0 && fields[0] == "update" {
			updateLine = fields[1:]
			continue
		}
		lines = append(lines, line)
	}
	Expect(updateLine).NotTo(BeNil(), "%s has no update line", path)
	s, err := parseScenario(strings.Join(lines, "\n"))
	Expect(err).NotTo(HaveOccurred(), path)
	s.expected = expected
	Expect(s.snapshot.Desired).To(HaveLen(1), "%s: a plan is for one LRP", path)
	guid := s.snapshot.Desired[0].ProcessGuid

	a, err := parseAttrs(updateLine)
	Expect(err).NotTo(HaveOccurred(), path)
	update := &models.DesiredLRPUpdate{}
	if id := a.string("definition", ""); id != "" {
		update.Definition = &models.LRPDefinition{
			DefinitionId: id, MemoryMb: a.int32("memory", 256), DiskMb: a.int32("disk", 512),
		}
	}
	strategy := &models.UpdateStrategy{
		MaxSurge: a.string("surge", ""), MaxUnavailable: a.string("unavailable", ""),
		MinReadyMs: a.duration("min_ready", 0).Milliseconds(),
	}
	if !proto.Equal(strategy, &models.UpdateStrategy{}) {
		update.UpdateStrategy = strategy
	}
	if n := a.int32("instances", -1); n >= 0 {
		update.Instances = &n
	}
	if target := a.int32("target", 0); target > 0 {
		update.Staged = &models.StagedRollout{TargetPercent: float64(target)}
	}
	readyAfter := a.duration("ready_after", 0)
	Expect(a.done()).To(Succeed(), path)

	return &rolloutPlanScenario{
		scenario: s,
		state:    state,
		dryRun: convergence.DryRun{
			Snapshot: s.snapshot, ProcessGuid: guid, Update: update, ReadyAfter: readyAfter,
			Now: s.now, Config: s.config, RolloutInterval: time.Second,
		},
	}
}

func renderRolloutPlan(plan *models.RolloutPlan) string {
	var b strings.Builder
	Expect(models.WriteRolloutPlan(&b, plan, true)).To(Succeed())
	return b.String()
}

var _ = Describe("Rollout plans (dry runs)", func() {
	It("cover every case", func() {
		for _, name := range requiredRolloutPlans {
			Expect(filepath.Join(rolloutPlanDir, name+".txt")).To(BeAnExistingFile())
		}
	})

	paths, err := filepath.Glob(filepath.Join(rolloutPlanDir, "*.txt"))
	if err != nil {
		panic(err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		It("plans "+name, func() {
			s := loadRolloutPlan(path)
			plan, err := convergence.PlanRollout(s.dryRun)
			Expect(err).NotTo(HaveOccurred())
			got := renderRolloutPlan(plan)
			if *update {
				Expect(os.WriteFile(path, []byte(s.state+"\n"+scenarioSeparator+"\n"+got), 0o644)).To(Succeed())
				return
			}
			Expect(got).To(Equal(s.scenario.expected), "run go test ./convergence -update to accept a change, then review the diff")
		})
	}

	It("leaves the snapshot it was given as it was", func() {
		s := loadRolloutPlan(filepath.Join(rolloutPlanDir, "surge_25_percent.txt"))
		before := renderSnapshot(s.dryRun.Snapshot)
		_, err := convergence.PlanRollout(s.dryRun)
		Expect(err).NotTo(HaveOccurred())
		Expect(renderSnapshot(s.dryRun.Snapshot)).To(Equal(before))
	})

	It("refuses an LRP the snapshot does not hold, and instances set while autoscaling", func() {
		s := loadRolloutPlan(filepath.Join(rolloutPlanDir, "serial_default.txt"))
		in := s.dryRun
		in.ProcessGuid = "nobody"
		_, err := convergence.PlanRollout(in)
		Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_ResourceNotFound))

		in = s.dryRun
		in.Snapshot = &convergence.Snapshot{Desired: []convergence.DesiredSchedule{s.dryRun.Snapshot.Desired[0]}, Cells: s.dryRun.Snapshot.Cells}
		in.Snapshot.Desired[0].Autoscaling = &models.Autoscaling{Enabled: true, Min: 1, Max: 10}
		three := int32(3)
		in.Update = &models.DesiredLRPUpdate{Instances: &three}
		_, err = convergence.PlanRollout(in)
		Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("update.instances"))
	})

	// The property DESIGN §5 states, on random LRPs, strategies and
	// ready-after times: no pass of a plan takes the LRP below
	// instances − U available or beyond S surged, and every plan on
	// cells with room completes.
	It("never goes below instances - max_unavailable available nor beyond max_surge surged", func() {
		counts := []string{"", "0", "1", "2", "25%", "50%", "100%"}
		for seed := range uint64(200) {
			r := rand.New(rand.NewPCG(seed, 17))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			instances := int32(1 + r.IntN(12))
			s := &convergence.Snapshot{FreshDomains: []string{"apps"}, Partial: true}
			for i := range 1 + r.IntN(4) {
				s.Cells = append(s.Cells, convergence.CellRow{
					CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", i%3),
					Capacity:  convergence.Resources{MemoryMB: 1 << 20, DiskMB: 1 << 20, Instances: 1000},
					ExpiresAt: now.Add(30 * time.Second).UnixNano(),
				})
			}
			s.Desired = []convergence.DesiredSchedule{{
				ProcessGuid: "web", Domain: "apps", Instances: instances, ActiveDefinitionID: "v1",
				HealthyDefinitionID: "v1", MemoryMB: 64, DiskMB: 64,
			}}
			for index := range instances {
				s.Actual = append(s.Actual, convergence.ActualRow{
					ProcessGuid: "web", Index: index, Presence: ordinary, State: runningState, Domain: "apps",
					CellID: s.Cells[r.IntN(len(s.Cells))].CellID, DefinitionID: "v1", Routable: true,
					Occupied: r.IntN(3) == 0, Since: now.Add(-time.Hour).UnixNano(), ModificationIndex: 2,
					MemoryMB: 64, DiskMB: 64,
				})
			}
			strategy := &models.UpdateStrategy{
				MaxSurge: counts[r.IntN(len(counts))], MaxUnavailable: counts[r.IntN(len(counts))],
				MinReadyMs: int64(r.IntN(3)) * 2000,
			}
			plan, err := convergence.PlanRollout(convergence.DryRun{
				Snapshot: s, ProcessGuid: "web", Now: now, Config: convergence.DefaultConfig(),
				ReadyAfter: time.Duration(r.IntN(20)) * time.Second,
				Update: &models.DesiredLRPUpdate{
					Definition:     &models.LRPDefinition{DefinitionId: "v2", MemoryMb: 64, DiskMb: 64},
					UpdateStrategy: strategy,
				},
			})
			Expect(err).NotTo(HaveOccurred())
			st, err := models.ResolveRolloutStrategy(instances, strategy)
			Expect(err).NotTo(HaveOccurred())
			Expect(plan.Completes).To(BeTrue(), "seed %d: %s", seed, renderRolloutPlan(plan))
			Expect(plan.Passes).NotTo(BeEmpty())
			for _, pass := range plan.Passes {
				Expect(pass.Available).To(BeNumerically(">=", st.MinAvailable()), "seed %d: %s", seed, renderRolloutPlan(plan))
				Expect(pass.Surged).To(BeNumerically("<=", st.MaxSurge), "seed %d: %s", seed, renderRolloutPlan(plan))
			}
			last := plan.Passes[len(plan.Passes)-1]
			Expect(last.Updated).To(Equal(instances), "seed %d", seed)
			Expect(plan.ProjectedMs).To(Equal(last.AtMs))
		}
	})
})

// renderSnapshot is a snapshot as text, to compare one before and after.
func renderSnapshot(s *convergence.Snapshot) string {
	return fmt.Sprintf("%+v", *s)
}
