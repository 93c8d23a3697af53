package main

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

func (a *app) updateCommand() *cobra.Command {
	var (
		rollout     rolloutFlags
		routesFile  string
		annotation  string
		queue       bool
		validate    bool
		autoscaling autoscalingFlags
		override    bool
		reason      string
		budget      string
		budgetGroup string
	)
	cmd := &cobra.Command{
		Use:   "update GUID [--instances N] [--definition FILE [--id ID] [--queue] [--validate] [--target-percent P [--safe-rate R] [--seed S]] [--override-freeze --reason TEXT]] [--routes FILE] [--annotation S] [--autoscaling FILE] [--autoscaling-enabled=false] [--disruption-budget N|P%] [--budget-group NAME] [strategy flags]",
		Short: "Change a desired LRP's instances, routes, annotation or autoscaling, or give it a new definition",
		Long: `Change a desired LRP. At least one change flag is required.

--instances and --annotation change the LRP in place; nothing restarts.
--routes FILE (a JSON object, the same as a spec's "routes"; '-' reads stdin)
replaces the routes. A route entry's "port" (or "container_port") is the
container port it sends to, and must be one the definition exposes. Each
instance is routed through its own definition's routes: with --definition,
the new routes go with the new definition, and instances of an older one
that does not expose their ports keep the routes they had until they are
replaced. That is how a rollout moves an app from one port to another with
no failed request: --definition exposing 9090 --routes sending the hostname
to 9090; a definition that stops exposing a port a route uses is refused
unless the routes change with it.
--definition FILE (a JSON LRPDefinition; '-' reads stdin) stores a new
definition and makes it active. --id names it (the update identifier): sending
the same identifier and content again is a no-op, the same identifier with
other content is a ResourceConflict. Without --id the board derives an id
from the content. A new definition rolls the instances over (see 'cork rollout').
A new definition arriving while a rollout is under way supersedes it (the
rollout's operation ends CANCELED); with --queue it waits instead (its
operation PENDING) and starts when the rollout ends. With --validate nothing
changes until one extra, unroutable instance of the new definition has
become healthy (up to 3 attempts): then the update applies; never healthy,
its operation (VALIDATE) ends in ERROR and the instances stay as they are.
It does not supersede a rollout under way: it waits its turn. With -o table the
table is followed by the id of the operation that recorded the update
('cork operation ID').

--target-percent P rolls the new definition out in a staged phase: only P
percent of the instances (rounded up) move to it, the others stay on the
healthy definition, and once they run it the rollout holds (HOLDING) until
'cork rollout promote' (at 100 it completes as an unstaged one does).
--safe-rate ("<percent>%/<duration>", e.g. 5%/6h, 10%/5s, 6.25%/1h30m) grows
the share that far gradually rather than at once. Which instances move is
fixed by --seed (default: the guid and the definition id).

--override-freeze --reason TEXT, with --definition: the new definition rolls
out even while a freeze window is active ('cork freeze list'). Operators only;
the reason is required and recorded in the update's operation (its parameters
and history), and the rollout's status says it overrides the freeze.

--autoscaling FILE (a JSON Autoscaling, the same object as a spec's
"autoscaling"; '-' reads stdin) replaces the LRP's autoscaling settings.
With autoscaling enabled the board sets instances from the instances'
occupancy, within [min, max], and refuses --instances.
--autoscaling-enabled=false turns autoscaling off (instances stay where the
autoscaler left them until set); with --autoscaling FILE it overrides the
file's "enabled". --instances may come in the same update that turns
autoscaling off.

--analysis FILE (a JSON RolloutAnalysis: checks of the board's signals, of
Prometheus queries or of webhooks, and their interval; '-' reads stdin) judges
the rollout every interval; --on-failure (revert, hold, fail) says what a
failing verdict, or the progress deadline, does, --on-marginal (continue,
hold) what a marginal one does, --bake D keeps judging for D after every
index runs the new definition before the rollout completes, and --baseline
runs a fresh instance of the healthy definition beside each new one while it
is judged, for the analysis to compare with. See docs/analysis.md.

--disruption-budget N or P% sets how many of the LRP's indices may be down at
once for every voluntary disruption together: rollouts, drains of its cells,
moves between cells and zones, reverts. Crashes and lost cells count against
it but are never held. '' goes back to the default, the update strategy's
max_unavailable. --budget-group NAME puts the LRP in a budget group ('cork
budget-group'), whose budget it then shares with the group's other LRPs; ""
takes it out. Either flag keeps what the other one is. See
docs/disruption-budget.md.

The strategy flags (--max-surge, --max-unavailable, --min-ready,
--progress-deadline, --auto-revert, --history-limit) change the LRP's
update_strategy. The board replaces the stored strategy as a whole, so cork
reads the LRP first and sends its current strategy with the flags applied.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if flags.Changed("queue") && !flags.Changed("definition") {
				return usageErrorf("--queue queues a new definition; it needs --definition")
			}
			if flags.Changed("validate") && !flags.Changed("definition") {
				return usageErrorf("--validate validates a new definition; it needs --definition")
			}
			if err := rollout.check(flags); err != nil {
				return err
			}
			switch {
			case flags.Changed("override-freeze") && !flags.Changed("definition"):
				return usageErrorf("--override-freeze lets a new definition roll out during a freeze; it needs --definition")
			case override && reason == "":
				return usageErrorf("--override-freeze needs --reason TEXT, recorded in the operation")
			case flags.Changed("reason") && !override:
				return usageErrorf("--reason says why a freeze is overridden; it needs --override-freeze")
			}
			if !flags.Changed("instances") && !flags.Changed("definition") && !flags.Changed("annotation") && !flags.Changed("routes") &&
				!flags.Changed("autoscaling") && !flags.Changed("autoscaling-enabled") && !flags.Changed("disruption-budget") && !flags.Changed("budget-group") && !rollout.strategy.changed(flags) {
				return usageErrorf("update needs at least one of --instances, --definition, --routes, --annotation, --autoscaling, --autoscaling-enabled, --disruption-budget, --budget-group or a strategy flag")
			}
			stdin := 0
			for _, file := range []string{rollout.definitionFile, routesFile, autoscaling.file, rollout.analysisFile} {
				if file == "-" {
					stdin++
				}
			}
			if stdin > 1 {
				return usageErrorf("only one of --definition, --routes, --autoscaling and --analysis can be '-' (stdin)")
			}
			autoscalingSettings, err := a.autoscalingSettings(flags, &autoscaling)
			if err != nil {
				return err
			}
			update := &models.DesiredLRPUpdate{}
			if err := a.applyRolloutFlags(ctx, flags, args[0], &rollout, update); err != nil {
				return err
			}
			if flags.Changed("definition") {
				update.Queue = queue
				update.Validate = validate
				update.OverrideFreeze = override
				update.OverrideReason = reason
			}
			if flags.Changed("annotation") {
				if !utf8.ValidString(annotation) {
					return usageErrorf("--annotation must be UTF-8 text")
				}
				update.Annotation = &annotation
			}
			if flags.Changed("disruption-budget") || flags.Changed("budget-group") {
				// An update replaces the whole budget: the field not given
				// keeps what the LRP has.
				current, err := a.client().DesiredLRPByProcessGuid(ctx, args[0])
				if err != nil {
					return err
				}
				update.DisruptionBudget = &models.DisruptionBudget{
					MaxUnavailable: current.GetDisruptionBudget().GetMaxUnavailable(),
					Group:          current.GetDisruptionBudget().GetGroup(),
				}
				if flags.Changed("disruption-budget") {
					update.DisruptionBudget.MaxUnavailable = budget
				}
				if flags.Changed("budget-group") {
					update.DisruptionBudget.Group = budgetGroup
				}
			}
			update.Autoscaling = autoscalingSettings
			if flags.Changed("routes") {
				routes := &structpb.Struct{}
				if err := a.readSpec(routesFile, routes); err != nil {
					return err
				}
				update.Routes = routes
			}
			lrp, operationID, err := a.client().UpdateDesiredLRPWithOperation(ctx, args[0], update)
			if err != nil {
				return err
			}
			if err := a.emitDesiredLRP(lrp); err != nil {
				return err
			}
			a.printOperationID(operationID)
			return nil
		}),
	}
	flags := cmd.Flags()
	rollout.register(flags)
	flags.StringVar(&routesFile, "routes", "", "JSON file with the new routes, e.g. {\"http\": [{\"hostname\": \"a.example\", \"port\": 8080}]} ('-' for stdin)")
	flags.StringVar(&annotation, "annotation", "", "new annotation")
	flags.StringVar(&budgetGroup, "budget-group", "", `the budget group whose disruption budget the LRP shares with the group's other LRPs ("" for none)`)
	flags.StringVar(&budget, "disruption-budget", "", `indices that may be down at once for every voluntary disruption: a count or a percent ("" for the strategy's max_unavailable)`)
	flags.BoolVar(&queue, "queue", false, "with --definition: wait for a rollout under way to end instead of superseding it")
	flags.BoolVar(&validate, "validate", false, "with --definition: run one unroutable instance of it until healthy (3 attempts) before it becomes active")
	flags.BoolVar(&override, "override-freeze", false, "with --definition: roll it out even while a freeze window is active (operators only; needs --reason)")
	flags.StringVar(&reason, "reason", "", "with --override-freeze: why, recorded in the operation")
	autoscaling.registerFile(flags)
	autoscaling.registerEnabled(flags)
	return cmd
}

// rolloutFlags are the flags of an update that decide its rollout, shared
// by cork update and cork rollout plan: the new definition (--definition,
// --id), --instances, the strategy flags and the staged ones.
type rolloutFlags struct {
	instances      int32
	definitionFile string
	identifier     string
	strategy       strategyFlags
	staged         stagedFlags
	// stagedRollout is what the staged flags ask for, once checked.
	stagedRollout *models.StagedRollout
	// The rollout's analysis and failure policy.
	analysisFile string
	onFailure    string
	onMarginal   string
	bake         time.Duration
	baseline     bool
}

func (r *rolloutFlags) register(flags *pflag.FlagSet) {
	flags.Int32Var(&r.instances, "instances", 0, "desired number of instances")
	flags.StringVar(&r.definitionFile, "definition", "", "JSON file with the new LRPDefinition ('-' for stdin)")
	flags.StringVar(&r.identifier, "id", "", "update identifier naming the new definition")
	r.strategy.register(flags)
	r.staged.register(flags)
	flags.StringVar(&r.analysisFile, "analysis", "", `with --definition: JSON file with the rollout's analysis, e.g. {"checks": [{"name": "crashes", "provider": "board", "signal": "crash_rate", "max": 0.01}]} ('-' for stdin)`)
	flags.StringVar(&r.onFailure, "on-failure", "", "with --definition: what a failing verdict or the progress deadline does: revert, hold or fail (default: revert with auto_revert, otherwise fail)")
	flags.StringVar(&r.onMarginal, "on-marginal", "", "with --analysis: what a marginal verdict does: continue (default) or hold")
	flags.DurationVar(&r.bake, "bake", 0, "with --definition: once every index runs it, go on judging the rollout this long before it completes")
	flags.BoolVar(&r.baseline, "baseline", false, "with --analysis: run a fresh instance of the healthy definition beside each new one (at most 10) as the analysis' baseline")
}

// judgementFlags are the flags of a rollout's analysis and policy.
var judgementFlags = []string{"analysis", "on-failure", "on-marginal", "bake", "baseline"}

// check refuses, as a usage error naming the flag, a flag given without
// the one it needs or a staged flag out of range.
func (r *rolloutFlags) check(flags *pflag.FlagSet) error {
	if flags.Changed("id") && !flags.Changed("definition") {
		return usageErrorf("--id names a new definition; it needs --definition")
	}
	for _, name := range judgementFlags {
		if flags.Changed(name) && !flags.Changed("definition") {
			return usageErrorf("--%s judges the rollout of a new definition; it needs --definition", name)
		}
	}
	staged, err := r.staged.rollout(flags)
	r.stagedRollout = staged
	return err
}

// applyRolloutFlags sets the fields of update the flags given ask for
// (check passed): the strategy, merged into the LRP's current one (the
// board replaces it as a whole) and compare-and-set on its tag; the
// instances; the definition read from its file, with its id and staged
// phase.
func (a *app) applyRolloutFlags(ctx context.Context, flags *pflag.FlagSet, guid string, r *rolloutFlags, update *models.DesiredLRPUpdate) error {
	if r.strategy.changed(flags) {
		current, err := a.client().DesiredLRPByProcessGuid(ctx, guid)
		if err != nil {
			return err
		}
		merged, err := r.strategy.apply(flags, current.GetUpdateStrategy())
		if err != nil {
			return err
		}
		update.UpdateStrategy = merged
		// Compare-and-set: a strategy changed by someone else since the
		// read is not overwritten.
		update.ModificationTag = current.GetModificationTag()
	}
	if flags.Changed("instances") {
		update.Instances = &r.instances
	}
	if flags.Changed("definition") {
		var definition models.LRPDefinition
		if err := a.readSpec(r.definitionFile, &definition); err != nil {
			return err
		}
		if err := definition.Validate(); err != nil {
			return invalidSpec(r.definitionFile, err)
		}
		update.Definition = &definition
		update.UpdateIdentifier = r.identifier
		update.Staged = r.stagedRollout
		if flags.Changed("analysis") {
			var analysis models.RolloutAnalysis
			if err := a.readSpec(r.analysisFile, &analysis); err != nil {
				return err
			}
			update.Analysis = &analysis
		}
		update.OnFailure = r.onFailure
		update.OnMarginal = r.onMarginal
		update.BakeMs = r.bake.Milliseconds()
		update.Baseline = r.baseline
	}
	return nil
}

// stagedFlags are cork update's flags for a staged phase.
type stagedFlags struct {
	targetPercent float64
	safeRate      string
	seed          string
}

func (s *stagedFlags) register(flags *pflag.FlagSet) {
	flags.Float64Var(&s.targetPercent, "target-percent", 0, "with --definition: roll it out to this share of instances (percent, above 0, at most 100), then hold")
	flags.StringVar(&s.safeRate, "safe-rate", "", `with --target-percent: grow the share at this rate, "<percent>%/<duration>" (e.g. 5%/6h); without it: at once`)
	flags.StringVar(&s.seed, "seed", "", "with --target-percent: the seed that orders the instances (default: guid/definition id)")
}

// rollout is the staged phase the flags ask for: nil without
// --target-percent, or a usage error naming the flag that is wrong or
// given without the flag it needs.
func (s *stagedFlags) rollout(flags *pflag.FlagSet) (*models.StagedRollout, error) {
	if !flags.Changed("target-percent") {
		for _, name := range []string{"safe-rate", "seed"} {
			if flags.Changed(name) {
				return nil, usageErrorf("--%s belongs to a staged phase; it needs --target-percent", name)
			}
		}
		return nil, nil
	}
	if !flags.Changed("definition") {
		return nil, usageErrorf("--target-percent stages a new definition; it needs --definition")
	}
	if err := checkPercent("target-percent", s.targetPercent); err != nil {
		return nil, err
	}
	staged := &models.StagedRollout{TargetPercent: s.targetPercent, Seed: s.seed}
	if flags.Changed("safe-rate") {
		rate, err := parseSafeRate("safe-rate", s.safeRate)
		if err != nil {
			return nil, err
		}
		staged.SafeRate = rate
	}
	if len(s.seed) > models.MaxStageSeedBytes {
		return nil, usageErrorf("--seed must be at most %d bytes, got %d", models.MaxStageSeedBytes, len(s.seed))
	}
	return staged, nil
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
	flags.DurationVar(&s.progressDeadline, "progress-deadline", 0, "a rollout fails when no index completes for this long (0: "+shortDuration(models.DefaultProgressDeadline)+")")
	flags.BoolVar(&s.autoRevert, "auto-revert", false, "roll back to the healthy definition when a rollout fails")
	flags.Int32Var(&s.historyLimit, "history-limit", 0, "the newest definitions kept, and those in use however old (0: "+itoa(models.DefaultHistoryLimit)+")")
}

func (s *strategyFlags) changed(flags *pflag.FlagSet) bool {
	return anyChanged(flags, strategyFlagNames)
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
		// Named by the flag that set the field, when one did.
		field, reason, _ := strings.Cut(models.ConvertError(err).GetMessage(), ": ")
		if flag := strategyFieldFlags[field]; flag != "" && flags.Changed(flag) {
			return nil, usageErrorf("--%s %s: %s %s", flag, flags.Lookup(flag).Value, field, reason)
		}
		return nil, usageErrorf("update strategy: %v", err)
	}
	return merged, nil
}

// strategyFieldFlags names the flag of each field of an update strategy.
var strategyFieldFlags = map[string]string{
	"max_surge": "max-surge", "max_unavailable": "max-unavailable", "min_ready_ms": "min-ready",
	"progress_deadline_ms": "progress-deadline", "history_limit": "history-limit",
}
