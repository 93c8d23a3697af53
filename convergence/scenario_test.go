package convergence_test

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

var update = flag.Bool("update", false, "rewrite the expected plans in testdata/*.txt")

// Every case of issue 3 has its own scenario; deleting one fails here.
var requiredScenarios = []string{
	"missing",
	"extra_highest_index_first",
	"extra_in_stale_domain_kept",
	"removed_lrp_deleted",
	"removed_lrp_in_stale_domain_kept",
	"stale_unclaimed",
	"unclaimed_without_cell_placed",
	"unclaimed_no_fit_placement_error",
	"unclaimed_same_error_not_rewritten",
	"unclaimed_on_lost_cell",
	"claimed_on_lost_cell",
	"crashed_immediate",
	"crashed_backoff_not_expired",
	"crashed_backoff_expired",
	"crashed_gave_up",
	"cell_lost_suspect_and_replacement",
	"suspect_waiting",
	"suspect_deleted_after_replacement_runs",
	"suspect_promoted_when_cell_returns",
	"suspect_crashed_deleted",
	"other_presences_left_alone",
	"zone_spread",
	"tags",
	"capacity_exhaustion",
	"scarcity_first_instances_first",
	"mixed_pass",
	// Rolling updates (issue 5).
	"rollout_serial_default",
	"rollout_ready_successor_stops_predecessor",
	"rollout_surge_25_percent",
	"rollout_unavailable_1",
	"rollout_percent_rounding_3",
	"rollout_occupied_last",
	"rollout_deadline_failed",
	"rollout_deadline_auto_revert",
	"rollout_supersede",
	"rollout_remove_mid",
	"rollout_scale_mid",
	"rollout_cell_lost",
	"rollout_complete_and_cleanup",
	"rollout_settles",
	"rollout_removed_lrp_cleaned_up",
	"rollout_reverted_completes",
	"rollout_failed_starts_nothing",
	"rollout_retiring_rows_deleted",
	"rollout_stale_record_completes",
	// Placement and rollout correctness (issue 10).
	"targeted_pass_counts_other_lrps",
	"targeted_pass_memory_of_other_lrps",
	"overloaded_cell_moves_extra_instances",
	"overloaded_cell_nowhere_to_go",
	"overloaded_cell_partial_pass_waits",
	"rebalance_after_drain_and_return",
	"rebalance_surge_moves_several",
	"rebalance_waits_for_moves_in_flight",
	"rebalance_needs_room",
	"rebalance_move_dropped_when_stalled",
	"rollout_replacements_keep_zones",
	"rollout_reverted_keeps_retiring",
	// Operations (issue 11): the rollout's operation, the reaper.
	"operation_finishes_with_its_rollout",
	"operation_progress_and_lease",
	"operation_fails_with_its_rollout",
	"operation_auto_revert_in_history",
	"operation_reaper_adopts_expired_lease",
	"operation_reaper_lrp_gone",
	"operation_queued_starts_in_turn",
	"operation_queued_evicted",
	"operation_rollout_ended_before",
	// Autoscaling (issue 13).
	"autoscale_up",
	"autoscale_down_kept_by_window",
	"autoscale_down_after_window",
	"autoscale_clamped",
	"autoscale_down_keeps_occupied",
	"autoscale_stand_in_released",
	"autoscale_stand_in_released_replacement_serves",
	"autoscale_surge_not_demand",
	"autoscale_rollout_downscale",
	"autoscale_rollout_upscale",
	"autoscale_decision_follows_occupancy",
	// Fast revert (issue 30, item 6).
	"fast_rollback_all_at_once",
	"fast_rollback_room_for_5",
	"fast_rollback_room_waits",
	"fast_rollback_room_next",
	"fast_auto_revert",
	"fast_rollback_staged_25",
	// Rollouts that judge themselves (issue 30): what a verdict, the
	// failure policy and a bake do.
	"analysis_fail_holds",
	"analysis_held_starts_nothing",
	"analysis_fail_reverts",
	"analysis_fail_fails",
	"analysis_marginal_continues",
	"analysis_marginal_holds",
	"analysis_verdict_before_resume",
	"bake_starts",
	"bake_completes",
	"bake_fail_reverts",
	"deadline_holds",
	"baseline_beside_canaries",
	"baseline_kept_and_trimmed",
	"baseline_deleted_when_held",
	// Crash-aware placement (issue 31, item 6).
	"crash_restart_avoids_cell",
	"crash_only_cell_fits",
	"crash_outside_window_ignored",
	"crash_new_instances_avoid_cell",
	"crash_spike_reported",
	"crash_rebalance_avoids_cell",
}

func scenarioPaths() []string {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		panic(err)
	}
	return paths
}

func loadScenario(path string) *scenario {
	text, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	s, err := parseScenario(string(text))
	Expect(err).NotTo(HaveOccurred(), path)
	return s
}

var _ = Describe("Scenario files", func() {
	It("cover every case", func() {
		for _, name := range requiredScenarios {
			Expect(filepath.Join("testdata", name+".txt")).To(BeAnExistingFile())
		}
	})

	for _, path := range scenarioPaths() {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")

		It("plans "+name, func() {
			s := loadScenario(path)
			got := renderPlan(convergence.Compute(s.snapshot, s.now, s.config), s.now)
			if *update {
				err := os.WriteFile(path, []byte(s.state+"\n"+scenarioSeparator+"\n"+got), 0o644)
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(got).To(Equal(s.expected), "run go test ./convergence -update to accept a change, then review the diff")
		})

		It("plans "+name+" the same whatever the order of the snapshot", func() {
			s := loadScenario(path)
			want := renderPlan(convergence.Compute(s.snapshot, s.now, s.config), s.now)
			for seed := range uint64(5) {
				shuffled := shuffleSnapshot(s.snapshot, seed)
				Expect(renderPlan(convergence.Compute(shuffled, s.now, s.config), s.now)).To(Equal(want), "seed %d", seed)
			}
		})
	}
})

func shuffleSnapshot(s *convergence.Snapshot, seed uint64) *convergence.Snapshot {
	r := rand.New(rand.NewPCG(seed, 42))
	out := &convergence.Snapshot{
		Desired:      append([]convergence.DesiredSchedule(nil), s.Desired...),
		Actual:       append([]convergence.ActualRow(nil), s.Actual...),
		Cells:        append([]convergence.CellRow(nil), s.Cells...),
		FreshDomains: append([]string(nil), s.FreshDomains...),
		Partial:      s.Partial,
		Rollouts:     append([]convergence.RolloutRow(nil), s.Rollouts...),
		Definitions:  append([]convergence.DefinitionRow(nil), s.Definitions...),
		Operations:   append([]convergence.OperationRow(nil), s.Operations...),

		FreezeWindows: append([]*models.FreezeWindow(nil), s.FreezeWindows...),
		BudgetGroups:  append([]*models.BudgetGroup(nil), s.BudgetGroups...),
		Crashes:       append([]convergence.CrashRow(nil), s.Crashes...),
		CheckFailures: append([]models.CheckFailure(nil), s.CheckFailures...),
	}
	r.Shuffle(len(out.CheckFailures), func(i, j int) {
		out.CheckFailures[i], out.CheckFailures[j] = out.CheckFailures[j], out.CheckFailures[i]
	})
	r.Shuffle(len(out.BudgetGroups), func(i, j int) {
		out.BudgetGroups[i], out.BudgetGroups[j] = out.BudgetGroups[j], out.BudgetGroups[i]
	})
	r.Shuffle(len(out.Crashes), func(i, j int) { out.Crashes[i], out.Crashes[j] = out.Crashes[j], out.Crashes[i] })
	r.Shuffle(len(out.FreezeWindows), func(i, j int) {
		out.FreezeWindows[i], out.FreezeWindows[j] = out.FreezeWindows[j], out.FreezeWindows[i]
	})
	r.Shuffle(len(out.Operations), func(i, j int) { out.Operations[i], out.Operations[j] = out.Operations[j], out.Operations[i] })
	r.Shuffle(len(out.Rollouts), func(i, j int) { out.Rollouts[i], out.Rollouts[j] = out.Rollouts[j], out.Rollouts[i] })
	r.Shuffle(len(out.Definitions), func(i, j int) {
		out.Definitions[i], out.Definitions[j] = out.Definitions[j], out.Definitions[i]
	})
	r.Shuffle(len(out.Desired), func(i, j int) { out.Desired[i], out.Desired[j] = out.Desired[j], out.Desired[i] })
	r.Shuffle(len(out.Actual), func(i, j int) { out.Actual[i], out.Actual[j] = out.Actual[j], out.Actual[i] })
	r.Shuffle(len(out.Cells), func(i, j int) { out.Cells[i], out.Cells[j] = out.Cells[j], out.Cells[i] })
	r.Shuffle(len(out.FreshDomains), func(i, j int) {
		out.FreshDomains[i], out.FreshDomains[j] = out.FreshDomains[j], out.FreshDomains[i]
	})
	return out
}
