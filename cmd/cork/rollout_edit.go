package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// editFlagNames are cork rollout edit's flags, each one field of the edit.
var editFlagNames = []string{"max-surge", "max-unavailable", "min-ready", "progress-deadline", "target-percent", "safe-rate"}

func (a *app) editRolloutCommand() *cobra.Command {
	var (
		maxSurge, maxUnavailable, safeRate string
		minReady, progressDeadline         time.Duration
		targetPercent                      float64
	)
	cmd := &cobra.Command{
		Use: "edit GUID [--max-surge N|P%] [--max-unavailable N|P%] [--min-ready D] [--target-percent P] " +
			"[--safe-rate R] [--progress-deadline D]",
		Short: "Change the limits of a rollout under way",
		Long: `Change the limits of the LRP's rollout under way (PROGRESSING, HOLDING, or
REVERTED while its instances still go back), without restarting it: instances
already on the new definition stay, and the next pass works to the new
limits. Each flag given replaces its value; the others stay.

--max-surge and --max-unavailable are a count ("3") or a percent ("50%"), as
in 'cork update'; --min-ready and --progress-deadline are durations (30s,
2m); they change the LRP's update strategy. The progress deadline counts from
the rollout's last progress, so one shortened below the time since then fails
the rollout at the next pass.

--target-percent and --safe-rate ("<percent>%/<duration>", e.g. 10%/5s)
change a staged phase: it goes on from the share that stands now, never below
it (a target below it is refused), so the share does not jump. A phase that
holds at its target grows again toward a higher one.

The board records an EDIT operation whose history says what changed, from
and to. The output is the rollout status; with -o table it is followed by
the id of the EDIT operation.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if !anyChanged(flags, editFlagNames) {
				return usageErrorf("edit needs at least one of --max-surge, --max-unavailable, --min-ready, --target-percent, --safe-rate or --progress-deadline")
			}
			edit := &models.EditRolloutRequest{ProcessGuid: args[0]}
			for _, f := range []struct {
				name  string
				value string
				field **string
			}{{"max-surge", maxSurge, &edit.MaxSurge}, {"max-unavailable", maxUnavailable, &edit.MaxUnavailable}} {
				if !flags.Changed(f.name) {
					continue
				}
				if _, _, ok := models.ParseCountOrPercent(f.value); !ok {
					return usageErrorf(`--%s %q: want a count like "2" or a percent like "25%%" (0-100%%)`, f.name, f.value)
				}
				*f.field = proto.String(f.value)
			}
			for _, f := range []struct {
				name  string
				value time.Duration
				field **int64
			}{{"min-ready", minReady, &edit.MinReadyMs}, {"progress-deadline", progressDeadline, &edit.ProgressDeadlineMs}} {
				if !flags.Changed(f.name) {
					continue
				}
				if f.value < 0 || f.value%time.Millisecond != 0 {
					return usageErrorf("--%s %s: want a duration of whole milliseconds, not negative", f.name, f.value)
				}
				*f.field = proto.Int64(f.value.Milliseconds())
			}
			if flags.Changed("target-percent") {
				if err := checkPercent("target-percent", targetPercent); err != nil {
					return err
				}
				edit.TargetPercent = proto.Float64(targetPercent)
			}
			if flags.Changed("safe-rate") {
				rate, err := parseSafeRate("safe-rate", safeRate)
				if err != nil {
					return err
				}
				edit.SafeRate = rate
			}
			// What is left are the bounds (min_ready at most 1h, the
			// deadline at most 24h): the board's own rules, asked here so
			// that a bad value is a usage error and nothing is sent.
			if err := edit.Validate(); err != nil {
				return usageErrorf("rollout edit: %s", models.ConvertError(err).GetMessage())
			}
			status, operationID, err := a.client().EditRollout(ctx, edit)
			if err != nil {
				return err
			}
			return a.emitStageWrite(ctx, status, operationID)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&maxSurge, "max-surge", "", `replacements beside their predecessor at once: a count ("2") or a percent ("25%")`)
	f.StringVar(&maxUnavailable, "max-unavailable", "", "indices that may be without a serving instance: a count or a percent")
	f.DurationVar(&minReady, "min-ready", 0, "how long a new instance must run before its predecessor stops")
	f.DurationVar(&progressDeadline, "progress-deadline", 0, "the rollout fails when no index completes for this long (0: "+shortDuration(models.DefaultProgressDeadline)+")")
	f.Float64Var(&targetPercent, "target-percent", 0, "the share (percent, above 0 and at most 100) the staged phase grows to")
	f.StringVar(&safeRate, "safe-rate", "", `how fast the staged phase's share grows, "<percent>%/<duration>" (e.g. 10%/5s)`)
	return cmd
}

// anyChanged reports whether any of the named flags was given.
func anyChanged(flags *pflag.FlagSet, names []string) bool {
	for _, name := range names {
		if flags.Changed(name) {
			return true
		}
	}
	return false
}
