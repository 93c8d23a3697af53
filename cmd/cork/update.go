package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

func (a *app) updateCommand() *cobra.Command {
	var (
		instances      int32
		definitionFile string
		identifier     string
		annotation     string
		queue          bool
		strategy       strategyFlags
	)
	cmd := &cobra.Command{
		Use:   "update GUID [--instances N] [--definition FILE [--id ID] [--queue]] [--annotation S] [strategy flags]",
		Short: "Change a desired LRP's instances or annotation, or give it a new definition",
		Long: `Change a desired LRP. At least one change flag is required.

--instances and --annotation change the LRP in place; nothing restarts.
--definition FILE (a JSON LRPDefinition; '-' reads stdin) stores a new
definition and makes it active. --id names it (the update identifier): sending
the same identifier and content again is a no-op, the same identifier with
other content is a ResourceConflict. Without --id the board derives an id
from the content. A new definition rolls the instances over (see 'cork rollout').
A new definition arriving while a rollout is under way supersedes it (the
rollout's operation ends CANCELED); with --queue it waits instead (its
operation PENDING) and starts when the rollout ends. With -o table the
table is followed by the id of the operation that recorded the update
('cork operation ID').

The strategy flags (--max-surge, --max-unavailable, --min-ready,
--progress-deadline, --auto-revert, --history-limit) change the LRP's
update_strategy. The board replaces the stored strategy as a whole, so cork
reads the LRP first and sends its current strategy with the flags applied.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if flags.Changed("id") && !flags.Changed("definition") {
				return usageErrorf("--id names a new definition; it needs --definition")
			}
			if flags.Changed("queue") && !flags.Changed("definition") {
				return usageErrorf("--queue queues a new definition; it needs --definition")
			}
			if !flags.Changed("instances") && !flags.Changed("definition") && !flags.Changed("annotation") && !strategy.changed(flags) {
				return usageErrorf("update needs at least one of --instances, --definition, --annotation or a strategy flag")
			}
			update := &models.DesiredLRPUpdate{}
			if strategy.changed(flags) {
				current, err := a.client().DesiredLRPByProcessGuid(ctx, args[0])
				if err != nil {
					return err
				}
				merged, err := strategy.apply(flags, current.GetUpdateStrategy())
				if err != nil {
					return err
				}
				update.UpdateStrategy = merged
				// Compare-and-set: a strategy changed by someone else since
				// the read is not overwritten.
				update.ModificationTag = current.GetModificationTag()
			}
			if flags.Changed("instances") {
				update.Instances = &instances
			}
			if flags.Changed("annotation") {
				update.Annotation = &annotation
			}
			if flags.Changed("definition") {
				var definition models.LRPDefinition
				if err := a.readSpec(definitionFile, &definition); err != nil {
					return err
				}
				if err := definition.Validate(); err != nil {
					return invalidSpec(definitionFile, err)
				}
				update.Definition = &definition
				update.UpdateIdentifier = identifier
				update.Queue = queue
			}
			lrp, operationID, err := a.client().UpdateDesiredLRPWithOperation(ctx, args[0], update)
			if err != nil {
				return err
			}
			if err := emit(a, []*models.DesiredLRP{lrp}, desiredLRPTable); err != nil {
				return err
			}
			a.printOperationID(operationID)
			return nil
		}),
	}
	flags := cmd.Flags()
	flags.Int32Var(&instances, "instances", 0, "desired number of instances")
	flags.StringVar(&definitionFile, "definition", "", "JSON file with the new LRPDefinition ('-' for stdin)")
	flags.StringVar(&identifier, "id", "", "update identifier naming the new definition")
	flags.StringVar(&annotation, "annotation", "", "new annotation")
	flags.BoolVar(&queue, "queue", false, "with --definition: wait for a rollout under way to end instead of superseding it")
	strategy.register(flags)
	return cmd
}

// strategyFlags are cork update's flags for the update strategy.
type strategyFlags struct {
	maxSurge, maxUnavailable   string
	minReady, progressDeadline time.Duration
	autoRevert                 bool
	historyLimit               int32
}

var strategyFlagNames = []string{"max-surge", "max-unavailable", "min-ready", "progress-deadline", "auto-revert", "history-limit"}

func (s *strategyFlags) register(flags *pflag.FlagSet) {
	flags.StringVar(&s.maxSurge, "max-surge", "", `replacements beside their predecessor at once: a count ("2") or a percent ("25%")`)
	flags.StringVar(&s.maxUnavailable, "max-unavailable", "", "indices that may be without a serving instance: a count or a percent")
	flags.DurationVar(&s.minReady, "min-ready", 0, "how long a new instance must run before its predecessor stops")
	flags.DurationVar(&s.progressDeadline, "progress-deadline", 0, "a rollout fails when no index completes for this long (0: 10m)")
	flags.BoolVar(&s.autoRevert, "auto-revert", false, "roll back to the healthy definition when a rollout fails")
	flags.Int32Var(&s.historyLimit, "history-limit", 0, "definitions kept besides those in use (0: 10)")
}

func (s *strategyFlags) changed(flags *pflag.FlagSet) bool {
	for _, name := range strategyFlagNames {
		if flags.Changed(name) {
			return true
		}
	}
	return false
}

// apply returns current (nil: the defaults) with the flags given set, or
// a usage error naming the flag.
func (s *strategyFlags) apply(flags *pflag.FlagSet, current *models.UpdateStrategy) (*models.UpdateStrategy, error) {
	merged := &models.UpdateStrategy{}
	if current != nil {
		merged = proto.Clone(current).(*models.UpdateStrategy)
	}
	if flags.Changed("max-surge") {
		merged.MaxSurge = s.maxSurge
	}
	if flags.Changed("max-unavailable") {
		merged.MaxUnavailable = s.maxUnavailable
	}
	if flags.Changed("min-ready") {
		merged.MinReadyMs = s.minReady.Milliseconds()
	}
	if flags.Changed("progress-deadline") {
		merged.ProgressDeadlineMs = s.progressDeadline.Milliseconds()
	}
	if flags.Changed("auto-revert") {
		merged.AutoRevert = s.autoRevert
	}
	if flags.Changed("history-limit") {
		merged.HistoryLimit = s.historyLimit
	}
	if err := merged.Validate(); err != nil {
		return nil, usageErrorf("update strategy: %v", err)
	}
	return merged, nil
}
