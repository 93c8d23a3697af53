package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

// Staged phases: cork update --target-percent starts one; cork rollout
// promote, pause and resume steer it; rollout status shows it in STAGE.

// checkPercent is a usage error naming flag unless 0 < percent <= 100, the
// range the board accepts for a share.
func checkPercent(flag string, percent float64) error {
	if math.IsNaN(percent) || percent <= 0 || percent > 100 {
		return usageErrorf("--%s must be above 0 and at most 100, got %v", flag, percent)
	}
	return nil
}

// parseSafeRate reads a rate written "<percent>%/<duration>" (5%/6h,
// 10%/5s, 6.25%/1h30m), the duration in Go's syntax. Anything else is a
// usage error naming flag. The board counts the period in milliseconds, so
// a period that is not a whole number of them is refused rather than
// silently cut.
func parseSafeRate(flag, value string) (*models.SafeRate, error) {
	bad := func(why string) error {
		return usageErrorf("--%s %q: %s; want <percent>%%/<duration>, e.g. 5%%/6h", flag, value, why)
	}
	percentText, periodText, found := strings.Cut(value, "/")
	if !found {
		return nil, bad("no '/' between the percent and the period")
	}
	number, isPercent := strings.CutSuffix(percentText, "%")
	if !isPercent {
		return nil, bad("the share must end with '%'")
	}
	percent, err := strconv.ParseFloat(number, 64)
	if err != nil || math.IsNaN(percent) || percent <= 0 || percent > 100 {
		return nil, bad("the share must be a number above 0 and at most 100")
	}
	period, err := time.ParseDuration(periodText)
	if err != nil || period < time.Millisecond {
		return nil, bad("the period must be a duration of at least 1ms")
	}
	if period%time.Millisecond != 0 {
		return nil, bad("the period must be a whole number of milliseconds")
	}
	return &models.SafeRate{Percent: percent, PerMs: period.Milliseconds()}, nil
}

// formatPercent writes a share without trailing zeros and at most three
// decimals: 50, 6.25, 12.5, and a share caught mid-growth as 0.023 rather
// than its every digit.
func formatPercent(percent float64) string {
	return strconv.FormatFloat(math.Round(percent*1000)/1000, 'f', -1, 64) + "%"
}

// formatRate writes a rate the way --safe-rate reads it: 5%/6h0m0s.
func formatRate(r *models.SafeRate) string {
	return formatPercent(r.GetPercent()) + "/" + models.Millis(r.GetPerMs()).String()
}

// stageCell is the STAGE column of a rollout status: "" without a staged
// phase, otherwise where the phase stands, e.g.
//
//	6.25% → 12.5% at 5%/6h0m0s; share 7.3%; allowed 2, on v2 1; target in 4h12m3s
//
// The phase (prior → target, at a rate or "at once"), the share allowed
// now, the instances that share allows and those on the active
// definition, and then the time until the share reaches the target
// ("target reached" once it has) or, while the clock stands, "paused" and
// why. The share and counts are the board's, as of its answer; the time to
// the target is counted from now.
func stageCell(s *models.RolloutStatus, now time.Time) string {
	stage := s.GetStage()
	if stage == nil {
		return ""
	}
	phase := formatPercent(stage.GetPriorPercent()) + " → " + formatPercent(stage.GetTargetPercent())
	if stage.GetSafeRate() != nil {
		phase += " at " + formatRate(stage.GetSafeRate())
	} else {
		phase += " at once"
	}
	parts := []string{
		phase,
		fmt.Sprintf("share %.1f%%", stage.GetSharePercent()),
		fmt.Sprintf("allowed %d, on %s %d", stage.GetAllowedInstances(), s.GetActiveDefinitionId(), stage.GetActiveInstances()),
	}
	switch {
	case stage.GetPaused() && stage.GetPauseReason() != "":
		// A crash pause's reason says "paused: …" itself; an operator's
		// "paused by alice".
		reason := oneLine(stage.GetPauseReason())
		if !strings.HasPrefix(reason, "paused") {
			reason = "paused: " + reason
		}
		parts = append(parts, reason)
	case stage.GetPaused():
		parts = append(parts, "paused")
	case stage.GetTargetAt() == 0:
		parts = append(parts, "target reached")
	default:
		// A board clock a little ahead of cork's must not read as a
		// negative time.
		left := max(0, time.Unix(0, stage.GetTargetAt()).Sub(now))
		parts = append(parts, "target in "+left.Round(time.Second).String())
	}
	return strings.Join(parts, "; ")
}

// holdingMessage is what a watch says when it ends at a HOLDING phase.
func holdingMessage(s *models.RolloutStatus) string {
	msg := "rollout holding"
	if stage := s.GetStage(); stage != nil {
		msg += " at " + formatPercent(stage.GetTargetPercent())
	}
	msg += " until promoted"
	if s.GetReason() != "" {
		msg += ": " + s.GetReason()
	}
	return msg
}

func (a *app) promoteRolloutCommand() *cobra.Command {
	var (
		to   float64
		rate string
	)
	cmd := &cobra.Command{
		Use:   "promote GUID --to P [--rate R]",
		Short: "Start the next phase of a staged rollout",
		Long: `Start the next phase of the LRP's staged rollout (see 'cork update
--target-percent'): the share of instances on the active definition grows
from where it stands now to --to percent, at --rate ("<percent>%/<duration>",
e.g. 5%/6h), or at once without --rate. --to 100 finishes the rollout the way
an unstaged one finishes. The board refuses a share below the one that
stands (InvalidRequest) and an LRP without a staged rollout in PROGRESSING
or HOLDING (InvalidStateTransition).

The output is the rollout status; with -o table it is followed by the id of
the PROMOTE operation the board recorded.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if !flags.Changed("to") {
				return usageErrorf("promote needs --to: the share (percent) the next phase grows to")
			}
			if err := checkPercent("to", to); err != nil {
				return err
			}
			var safeRate *models.SafeRate
			if flags.Changed("rate") {
				parsed, err := parseSafeRate("rate", rate)
				if err != nil {
					return err
				}
				safeRate = parsed
			}
			status, operationID, err := a.client().PromoteRollout(ctx, args[0], to, safeRate)
			if err != nil {
				return err
			}
			return a.emitStageWrite(ctx, status, operationID)
		}),
	}
	cmd.Flags().Float64Var(&to, "to", 0, "the share (percent, above 0 and at most 100) the next phase grows to")
	cmd.Flags().StringVar(&rate, "rate", "", `how fast the share grows, "<percent>%/<duration>" (e.g. 5%/6h); without it: at once`)
	return cmd
}

func (a *app) pauseRolloutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pause GUID",
		Short: "Freeze the clock of a staged phase",
		Long: `Freeze the clock of the LRP's staged phase: its share stops growing and
its progress deadline stops running until 'cork rollout resume'. Instances
already moved stay where they are. The output is the rollout status; with
-o table it is followed by the id of the PAUSE operation.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			status, operationID, err := a.client().PauseRollout(ctx, args[0])
			if err != nil {
				return err
			}
			return a.emitStageWrite(ctx, status, operationID)
		}),
	}
}

func (a *app) resumeRolloutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "resume GUID",
		Short: "Start the clock of a paused staged phase again",
		Long: `Start the clock of the LRP's paused staged phase again: the share grows
from where it stood, the time paused left out. The output is the rollout
status; with -o table it is followed by the id of the RESUME operation.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			status, operationID, err := a.client().ResumeRollout(ctx, args[0])
			if err != nil {
				return err
			}
			return a.emitStageWrite(ctx, status, operationID)
		}),
	}
}

// emitStageWrite prints the status a promote, pause or resume answered,
// then (tables only) the id of the operation that call recorded: not the
// status's operation_id, which names the operation that started the
// rollout.
func (a *app) emitStageWrite(ctx context.Context, status *models.RolloutStatus, operationID string) error {
	if err := a.emitRolloutStatus(ctx, status); err != nil {
		return err
	}
	a.printOperationID(operationID)
	return nil
}
