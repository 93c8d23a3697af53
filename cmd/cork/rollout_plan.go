package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

func (a *app) rolloutPlanCommand() *cobra.Command {
	var (
		rollout    rolloutFlags
		readyAfter time.Duration
	)
	cmd := &cobra.Command{
		Use:   "plan GUID --definition FILE [--id ID] [--instances N] [--target-percent P [--safe-rate R] [--seed S]] [strategy flags] [--ready-after D]",
		Short: "Show what an update would do, pass by pass, without doing it",
		Long: `Show the rolling update that 'cork update GUID' with the same flags would
start, pass by pass, and change nothing. The board plays the update on the
LRP's live instances and every cell's free room with its own convergence
planner, assuming each new instance runs and is routable --ready-after after
it is placed (default 0: by the next pass, a second later) and never
crashes.

With -o table: a header (from → to, instances, the effective max_surge,
max_unavailable and min_ready, ready after), a line per pass — its time
from the update, the indices whose new instance starts (cell/zone) and
those whose old instance is told to stop, then the indices available, the
instances surged beyond the count, and the indices updated — and the
projected time to COMPLETE, or why the rollout would stop short (an
instance that fits no cell, a staged phase that holds, a failure). -o json
prints the plan as one JSON line. A plan that does not complete still
exits 0.

The flags are cork update's: see 'cork update --help'.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if !flags.Changed("definition") {
				return usageErrorf("plan shows the rollout of a new definition; it needs --definition")
			}
			if readyAfter < 0 {
				return usageErrorf("--ready-after must not be negative, got %s", readyAfter)
			}
			if err := rollout.check(flags); err != nil {
				return err
			}
			update := &models.DesiredLRPUpdate{}
			if err := a.applyRolloutFlags(ctx, flags, args[0], &rollout, update); err != nil {
				return err
			}
			plan, err := a.client().RolloutPlan(ctx, args[0], update, readyAfter)
			if err != nil {
				return err
			}
			if a.format == formatTable {
				return models.WriteRolloutPlan(a.out, plan, false)
			}
			return printJSONLines(a.out, []*models.RolloutPlan{plan})
		}),
	}
	flags := cmd.Flags()
	rollout.register(flags)
	flags.DurationVar(&readyAfter, "ready-after", 0, "how long each new instance takes to run once placed (e.g. 10s)")
	return cmd
}
