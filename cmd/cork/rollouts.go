package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// rolloutStatusHeaders ends with STAGE and REASON, the two columns of free
// text, so that every column before them is one word of a row.
var rolloutStatusHeaders = []string{"PROCESS_GUID", "STATE", "ACTIVE", "HEALTHY", "UPDATED", "IN_FLIGHT", "DEFINITIONS", "DEADLINE", "FAST", "STRATEGY", "STAGE", "REASON"}

// rolloutStatusRow is a status as a table row, with the LRP's update
// strategy as the board applies it to the status's instances, and the
// staged phase (see stageCell) as it stands at now.
func rolloutStatusRow(s *models.RolloutStatus, strategy *models.UpdateStrategy, now time.Time) []string {
	return []string{
		s.GetProcessGuid(), s.GetState().String(), s.GetActiveDefinitionId(), s.GetHealthyDefinitionId(),
		fmt.Sprintf("%d/%d", s.GetUpdatedInstances(), s.GetInstances()), itoa(s.GetInFlight()),
		definitionCounts(s), timestamp(s.GetDeadlineAt()), yesNo(s.GetFast()), effectiveStrategy(s.GetInstances(), strategy),
		stageCell(s, now), s.GetReason(),
	}
}

// instanceSignalsHeaders are the columns of 'cork rollout status
// --instances', LAST_CRASH the free text last.
var instanceSignalsHeaders = []string{"DEFINITION", "INDEX", "INSTANCE_GUID", "CRASHES", "RESTARTS", "TIME_TO_READY", "CHECKS", "FAILED", "LATENCY_P99", "MEMORY_P99", "LAST_CRASH"}

// instanceSignalsRows are the status's instances, a row each, definition
// by definition as the status lists them (newest first) and by index
// within each: "-" where the window has no sample (no start became ready,
// no check, no memory sample).
func instanceSignalsRows(s *models.RolloutStatus) [][]string {
	var rows [][]string
	for _, d := range s.GetDefinitions() {
		for _, in := range d.GetInstanceSignals() {
			ready, latency, memory := "", "", ""
			if in.TimeToReadyMs != nil {
				ready = (time.Duration(in.GetTimeToReadyMs()) * time.Millisecond).String()
			}
			if in.HealthLatencyP99Ms != nil {
				latency = (time.Duration(in.GetHealthLatencyP99Ms()) * time.Millisecond).String()
			}
			if in.MemoryMbP99 != nil {
				memory = itoa(in.GetMemoryMbP99()) + "MB"
			}
			rows = append(rows, orDash([]string{
				d.GetDefinitionId(), itoa(in.GetIndex()), in.GetInstanceGuid(), itoa(in.GetCrashes()), itoa(in.GetRestarts()),
				ready, itoa(in.GetHealthChecks()), itoa(in.GetHealthCheckFailures()), latency, memory,
				shorten(in.GetLastCrashReason(), 60),
			}))
		}
	}
	return rows
}

// emitRolloutStatus prints a status as one JSON line, or as a table with
// the LRP's effective strategy, which the table reads from the LRP: a
// RolloutStatus does not carry it. When the LRP is autoscaled, the table is
// followed by the autoscaler's last decision (the count the rollout works
// toward). After a rollback or an abort it is followed by the id of the
// operation that started the rollout.
func (a *app) emitRolloutStatus(ctx context.Context, s *models.RolloutStatus) error {
	if a.format != formatTable {
		return printJSONLines(a.out, []*models.RolloutStatus{s})
	}
	lrp, err := a.client().DesiredLRPByProcessGuid(ctx, s.GetProcessGuid())
	if err != nil {
		return err
	}
	row := rolloutStatusRow(s, lrp.GetUpdateStrategy(), time.Now())
	if err := printTable(a.out, rolloutStatusHeaders, [][]string{row}); err != nil {
		return err
	}
	if b := s.GetBlockedBy(); b != nil {
		fmt.Fprintf(a.out, "blocked: %s\n", blockedLine(b, time.Now()))
	}
	if lrp.GetAutoscaling().IsEnabled() {
		fmt.Fprintf(a.out, "autoscaler: %s\n", autoscalerLine(lrp))
	}
	for _, d := range s.GetDefinitions() {
		if line := signalsLine(d); line != "" {
			fmt.Fprintln(a.out, line)
		}
	}
	if j := s.GetJudgement(); j != nil {
		fmt.Fprintln(a.out, judgementLine(j))
		if v := j.LastVerdict(); v != nil {
			fmt.Fprintln(a.out, "verdict: "+models.VerdictLine(v))
		}
	}
	return nil
}

// blockedLine says what blocks a rollout, and since when, at now, e.g.
// "no_capacity for 12m3s (since 2026-11-25T11:48:00Z) — index 0 fits no
// cell: zone z1 is short of memory (256 MB free at most, 512 MB needed)",
// followed by "; expected to move at TIME" when the board can tell.
func blockedLine(b *models.BlockedBy, now time.Time) string {
	line := b.GetReason()
	if b.GetSince() != 0 {
		since := time.Unix(0, b.GetSince())
		line += fmt.Sprintf(" for %s (since %s)", max(now.Sub(since), 0).Round(time.Second), timestamp(b.GetSince()))
	}
	if b.GetDetail() != "" {
		line += " — " + oneLine(b.GetDetail())
	}
	if b.GetEstimate() != 0 {
		line += "; expected to move at " + timestamp(b.GetEstimate())
	}
	return line
}

// judgementLine says what judges a rollout, e.g. "analysis: 2 checks every
// 10s; on_failure hold, on_marginal continue; bake 10m0s (since
// 12:00:00)".
func judgementLine(j *models.RolloutJudgement) string {
	analysis := "analysis: none"
	if an := j.GetAnalysis(); an != nil {
		analysis = fmt.Sprintf("analysis: %d checks every %s", len(an.GetChecks()), an.Interval())
	}
	onFailure, onMarginal := j.GetOnFailure(), j.GetOnMarginal()
	if onFailure == "" {
		onFailure = "default (revert with auto_revert, else fail)"
	}
	if onMarginal == "" {
		onMarginal = models.OnMarginalContinue
	}
	line := fmt.Sprintf("%s; on_failure %s, on_marginal %s", analysis, onFailure, onMarginal)
	if j.GetBakeMs() > 0 {
		line += "; bake " + models.Millis(j.GetBakeMs()).String()
		if at := j.GetBakeStartedAt(); at > 0 {
			line += " (since " + time.Unix(0, at).UTC().Format("15:04:05") + ")"
		}
	}
	return line
}

// signalsLine writes a definition's signals as one line, e.g.
// "signals v2 (last 5m0s): 2 crashes (0.1 per instance per minute, most
// often: exited with code 1); 4 ready (start to ready p50 1.1s, p99 4s);
// 600 health checks (3 failed: 0.005, latency p99 20ms); memory p99 64
// MB" — the memory part only with samples; empty when the board sent
// none.
func signalsLine(d *models.DefinitionInstances) string {
	f := d.GetSignals()
	if f == nil {
		return ""
	}
	crashes := fmt.Sprintf("%d crashes (%.3g per instance per minute", f.GetCrashes(), f.GetCrashRate())
	if f.GetTopCrashReason() != "" {
		crashes += ", most often: " + f.GetTopCrashReason()
	}
	crashes += ")"
	ready := fmt.Sprintf("%d ready", f.GetReadied())
	if f.GetReadied() > 0 {
		ready += fmt.Sprintf(" (start to ready p50 %s, p99 %s)",
			time.Duration(f.GetTimeToReadyP50Ms())*time.Millisecond, time.Duration(f.GetTimeToReadyP99Ms())*time.Millisecond)
	}
	health := fmt.Sprintf("%d health checks", f.GetHealthChecks())
	if f.GetHealthChecks() > 0 {
		health += fmt.Sprintf(" (%d failed: %.3g", f.GetHealthCheckFailures(), f.GetHealthFailureRate())
		if f.HealthLatencyP99Ms != nil {
			health += fmt.Sprintf(", latency p99 %s", time.Duration(f.GetHealthLatencyP99Ms())*time.Millisecond)
		}
		health += ")"
	}
	if f.MemoryMbP99 != nil {
		health += fmt.Sprintf("; memory p99 %d MB", f.GetMemoryMbP99())
	}
	return fmt.Sprintf("signals %s (last %s): %s; %s; %s", d.GetDefinitionId(),
		(time.Duration(f.GetWindowMs()) * time.Millisecond).Round(time.Second), crashes, ready, health)
}

func (a *app) rolloutTableRow(ctx context.Context, s *models.RolloutStatus) ([]string, error) {
	lrp, err := a.client().DesiredLRPByProcessGuid(ctx, s.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	return rolloutStatusRow(s, lrp.GetUpdateStrategy(), time.Now()), nil
}

// definitionCounts writes "v2:3/3 v1:3/2": instances and, of those,
// running and routable, per definition, newest first.
func definitionCounts(s *models.RolloutStatus) string {
	parts := make([]string, 0, len(s.GetDefinitions()))
	for _, d := range s.GetDefinitions() {
		parts = append(parts, fmt.Sprintf("%s:%d/%d", d.GetDefinitionId(), d.GetInstances(), d.GetRunning()))
	}
	return strings.Join(parts, " ")
}

func (a *app) rolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout status|plan|rollback|abort|promote|pause|resume|edit GUID",
		Short: "Follow and steer the rolling update of an LRP",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return usageErrorf("rollout needs a subcommand: status, plan, rollback, abort, promote, pause, resume or edit")
		}),
	}
	cmd.AddCommand(a.rolloutStatusCommand(), a.rolloutPlanCommand(), a.rollbackCommand(), a.abortRolloutCommand(),
		a.promoteRolloutCommand(), a.pauseRolloutCommand(), a.resumeRolloutCommand(), a.editRolloutCommand())
	return cmd
}

func (a *app) rolloutStatusCommand() *cobra.Command {
	var watch, instances bool
	cmd := &cobra.Command{
		Use:   "status GUID [--watch | --instances]",
		Short: "Where the LRP's rolling update stands",
		Long: `Where the LRP's rolling update stands: its state (NONE, PROGRESSING,
COMPLETE, FAILED, REVERTED, HOLDING, HELD), the active and healthy definitions, how
many indices run the active definition and are ready (UPDATED), the
replacements under way (IN_FLIGHT), instances per definition
(id:instances/running), the deadline by which an index must complete, whether
the rollout is a fast one (FAST, "fast" in JSON: a rollback or abort asked
with --fast, or an auto-revert), and why.

With -o table, STAGE shows a staged phase (see 'cork update
--target-percent'), "-" for a rollout that is not staged: the phase
("6.25% → 12.5% at 5%/6h0m0s", or "… at once"), the share it allows now,
the instances that share allows and those on the active definition
("allowed 3, on v2 2"), and the time until the share reaches the target
("target in 4h12m3s", "target reached"), or why its clock stands ("paused
by alice", "paused: v2 instance 3 crashed"). HOLDING: the phase reached its
target and waits for 'cork rollout promote'.

With -o table, STRATEGY is the LRP's update strategy as the board applies
it: defaults filled in for what is not set, a percent followed by the count it
comes to for these instances ("max_surge=25%(3)"), a count the board changes
followed by what it uses ("max_surge=0(1)": 0/0 surges 1). The JSON output is
the status alone; 'cork get GUID' shows the strategy as stored.

With -o table, the table is followed by a line per definition with what the
board saw its instances do over the last 5 minutes (less while the board has
known the definition for less): crashes, per instance per minute, and the most
frequent reason; instances that became ready, and the time from start to
ready (p50, p99); the health checks its healthy instances ran (as their
cells reported them), how many failed and the share, and the checks'
latency p99; and the p99 of the memory its running instances held. The
JSON output has them as each definition's "signals".

With --instances and -o table, the output is a row per instance instead
(per index of each definition, whatever instance guid each start gave it),
over the same window: its crashes and the latest crash's reason (LAST_CRASH),
the starts after a crash (RESTARTS), the time from start to ready of its
latest start (TIME_TO_READY), the health checks it ran once healthy
(CHECKS), how many failed (FAILED), their latency p99, and the p99 of the
memory it held (MEMORY_P99), "-" without a sample. Instances whose row is
gone are not listed. The JSON output always has them as each definition's
"instance_signals".

With -o table, a rollout whose update asked for analysis, a failure policy or
a bake (docs/analysis.md) is followed by what judges it ("analysis: 2 checks
every 10s; on_failure hold, on_marginal continue; bake 10m0s") and its latest
verdict ("verdict: FAIL at 12:03:04 (rolling, v2 against v1): errors 0.05 > max
0.015 (1.5 × baseline 0.01) (by 233%, margin 10%)"). The JSON has them as
"judgement", with the latest 20 verdicts.

With -o table and autoscaling enabled, the table is followed by the
autoscaler's last decision ("autoscaler: occupied 4, ready_target 0.5: …;
instances 2 → 8 (at …)"): the count the rollout works toward. A watch
prints the status rows only.

Without --watch the exit code is 0 whatever the state: the state is in the
output. --watch prints the status again whenever it changes, following the
board's event stream, until the rollout is over, and its exit code says how
it ended: 0 COMPLETE (or no rollout at all), 3 FAILED (nothing moves until a
rollback, an abort or a new definition), 4 REVERTED (auto_revert took every
index back to the healthy definition; cork waits until it is back), 5 HOLDING
(a staged phase reached its target and waits for a promote), 6 HELD (the
update's failure policy held it: 'cork rollout resume', rollback or abort), 1 when cork
itself failed (the board unreachable, say). A paused phase does not end a
watch.

How a watch prints depends on where its output goes. On a terminal, with
-o table, it draws one line and rewrites it in place (carriage return, then
erase to the end of the line) at every change and at least once a second,
so that its clocks move between events, e.g.

  hello  PROGRESSING  [██████████░░░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s  deadline in 9m48s

the bar counting the indices updated, a staged phase adding "share 12.4% of
50%". The line keeps within the terminal's width (80 when it does not say):
the bar narrows, then the deadline, the elapsed time and the rest go. When
the rollout is over the line stays, followed by "rollout complete: <why>"
(or, for the outcomes with their own exit code, the message on stderr).
Anywhere else (a pipe, a file), and with -o json, a watch prints the status
again as a new line or row whenever it changes; with -o table the header is
printed again only when a column has to widen.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if instances && watch {
				return usageErrorf("--instances shows the status once: not with --watch")
			}
			if !watch {
				status, err := a.client().RolloutStatus(ctx, args[0])
				if err != nil {
					return err
				}
				if instances && a.format == formatTable {
					return printTable(a.out, instanceSignalsHeaders, instanceSignalsRows(status))
				}
				return a.emitRolloutStatus(ctx, status)
			}
			return a.watchRollout(ctx, args[0])
		}),
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "follow the status until the rollout is over: one updating progress line on a terminal with -o table, otherwise a line per change")
	cmd.Flags().BoolVar(&instances, "instances", false, "with -o table, a row per instance instead: its crashes, restarts, time to ready, health checks, latency and memory over the signal window")
	return cmd
}

// watchRollout prints the status, then again after every event about the
// LRP that changes it, until the rollout is over or Ctrl-C. On a terminal
// with -o table it rewrites one progress line instead, also once a second
// so that its clocks move between events.
func (a *app) watchRollout(ctx context.Context, guid string) error {
	var last *models.RolloutStatus
	rows := &tableStream{out: a.out, headers: rolloutStatusHeaders}
	var line *progressLine
	if _, isTerminal := a.terminal(); isTerminal && a.format == formatTable {
		line = &progressLine{out: rawWriter{a}, terminal: a.terminal, started: time.Now()}
	}
	show := func() (over bool, err error) {
		status, err := a.client().RolloutStatus(ctx, guid)
		if err != nil {
			return true, err
		}
		over, outcome := rolloutOver(status)
		if line != nil {
			line.status = status
			if over {
				return true, errors.Join(outcome, line.end(time.Now(), outcome))
			}
			return false, line.draw(time.Now())
		}
		if !sameForWatch(status, last, a.format == formatTable) {
			if err := a.printWatched(ctx, rows, status); err != nil {
				return true, err
			}
			if err := a.out.Flush(); err != nil {
				return true, err
			}
			last = status
		}
		return over, outcome
	}
	if over, err := show(); over || err != nil {
		return err
	}
	// The stream opens before the status is read again, so that no
	// change between that read and the stream goes unseen.
	stream, err := a.client().Events(ctx, client.EventsOptions{Types: []string{
		models.EventRolloutChanged, models.EventActualLRPCreated, models.EventActualLRPChanged,
		models.EventActualLRPRemoved, models.EventActualLRPCrashed,
	}})
	if err != nil {
		return err
	}
	defer stream.Close()
	// The reader of the stream ends with the watch.
	readerCtx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	changes := eventsAbout(readerCtx, stream, guid)
	var ticks <-chan time.Time
	if line != nil {
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		ticks = ticker.C
	}
	for {
		over, err := show()
		if ctx.Err() != nil {
			return line.interrupted()
		}
		if over || err != nil {
			return err
		}
		if err := waitForChange(ctx, changes, ticks, line); err != nil {
			if ctx.Err() != nil {
				return line.interrupted()
			}
			return err
		}
	}
}

// eventsAbout passes on, as they come, the stream's events about the LRP
// (nil) and the error that ends the stream, until ctx ends.
func eventsAbout(ctx context.Context, stream *client.EventStream, guid string) <-chan error {
	changes := make(chan error, 1)
	go func() {
		for {
			err := nextEventAbout(stream, guid)
			select {
			case changes <- err:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return changes
}

// waitForChange waits for the next event about the LRP, redrawing the
// progress line (when there is one) at every tick meanwhile.
func waitForChange(ctx context.Context, changes <-chan error, ticks <-chan time.Time, line *progressLine) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-changes:
			return err
		case now := <-ticks:
			if err := line.draw(now); err != nil {
				return err
			}
		}
	}
}

// sameForWatch reports whether a watch has nothing new to print: the two
// statuses are equal but for what the board's clock alone moves between
// any two reads — a staged phase's share_percent, and the signals' windows
// (window_ms, which grows until it spans the whole window, and the crash
// rate over it) — and, for a table (table), but for the definitions'
// signals altogether, which change with every health report and which no
// column shows. A change that matters (the instances the share allows,
// those moved, the state, a crash, a health report in JSON) still differs.
func sameForWatch(a, b *models.RolloutStatus, table bool) bool {
	if b == nil {
		return a == nil
	}
	a, b = proto.Clone(a).(*models.RolloutStatus), proto.Clone(b).(*models.RolloutStatus)
	for _, s := range []*models.RolloutStatus{a, b} {
		if s.Stage != nil {
			s.Stage.SharePercent = 0
		}
		for _, d := range s.Definitions {
			if table {
				d.Signals, d.InstanceSignals = nil, nil
				continue
			}
			if d.Signals != nil {
				d.Signals.WindowMs, d.Signals.CrashRate = 0, 0
			}
			for _, in := range d.InstanceSignals {
				in.WindowMs = 0
			}
		}
	}
	return proto.Equal(a, b)
}

// printWatched prints one status of a watch: a JSON line, or a table row
// under the header the watch printed last.
func (a *app) printWatched(ctx context.Context, rows *tableStream, s *models.RolloutStatus) error {
	if a.format != formatTable {
		return printJSONLines(a.out, []*models.RolloutStatus{s})
	}
	row, err := a.rolloutTableRow(ctx, s)
	if err != nil {
		return err
	}
	return rows.add(row)
}

// rolloutOver reports whether a watch is done, and with what outcome: an
// error with its own exit code when the requested definition is not what
// runs in the end, or not yet everywhere (HOLDING).
func rolloutOver(s *models.RolloutStatus) (bool, error) {
	switch s.GetState() {
	case models.RolloutStatus_NONE, models.RolloutStatus_COMPLETE:
		return true, nil
	case models.RolloutStatus_REVERTED:
		// Still moving back until it finishes; the watch follows it there.
		if s.GetFinishedAt() == 0 {
			return false, nil
		}
		return true, &outcomeError{code: exitRolloutReverted, msg: "rollout reverted: " + s.GetReason()}
	case models.RolloutStatus_FAILED:
		return true, &outcomeError{code: exitRolloutFailed, msg: "rollout failed: " + s.GetReason()}
	case models.RolloutStatus_HOLDING:
		// Nothing moves until someone promotes (or rolls back), so the
		// watch would wait forever; a script learns it from the code.
		return true, &outcomeError{code: exitRolloutHolding, msg: holdingMessage(s)}
	case models.RolloutStatus_HELD:
		// Nothing moves until someone resumes, rolls back or aborts.
		return true, &outcomeError{code: exitRolloutHeld, msg: "rollout held: " + s.GetReason()}
	}
	return false, nil
}

// nextEventAbout waits for the next event about the LRP.
func nextEventAbout(stream *client.EventStream, guid string) error {
	for {
		event, err := stream.Next()
		if err != nil {
			return err
		}
		if event.Type == models.EventEventsLost || eventGuid(event.Payload) == guid {
			return nil
		}
	}
}

func eventGuid(payload proto.Message) string {
	switch p := payload.(type) {
	case *models.RolloutChangedEvent:
		return p.GetStatus().GetProcessGuid()
	case *models.ActualLRPCreatedEvent:
		return p.GetActualLrp().GetProcessGuid()
	case *models.ActualLRPChangedEvent:
		return p.GetAfter().GetProcessGuid()
	case *models.ActualLRPRemovedEvent:
		return p.GetActualLrp().GetProcessGuid()
	case *models.ActualLRPCrashedEvent:
		return p.GetActualLrp().GetProcessGuid()
	}
	return ""
}

// fastHelp is the --fast flag's help, the same for rollback and abort.
const fastHelp = "a fast rollout: every index at once as far as the cells have room, start before stop, within max_unavailable, without waiting for min_ready"

func (a *app) rollbackCommand() *cobra.Command {
	var to string
	var fast bool
	cmd := &cobra.Command{
		Use:   "rollback GUID [--to DEFINITION_ID] [--fast]",
		Short: "Re-activate a kept definition; instances roll back to it start-before-stop",
		Long: `Re-activate a kept definition (see 'cork definitions GUID'); the instances
roll back to it the same start-before-stop way as any rollout. Without --to,
only a definition known to run: the healthy definition while a rollout is
under way or failed, otherwise the newest kept definition that became
healthy; never one that failed validation. --to may name any kept definition
but the active one; one that failed validation or never became healthy is
rolled back to with a warning on stderr.

With --fast the rollback is a fast rollout, as an auto-revert is: every index
starts its replacement at once as far as the cells have room for more
instances (the rest as room frees up), still start-before-stop and never
more than max_unavailable indices down, and a replacement is ready as soon
as it runs and is routable (min_ready is not waited for). A rollback is
never staged, fast or not. The operation's parameters record fast.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			status, warning, err := a.client().Rollback(ctx, args[0], to, fast)
			if err != nil {
				return err
			}
			a.warn(warning)
			if err := a.emitRolloutStatus(ctx, status); err != nil {
				return err
			}
			a.printOperationID(status.GetOperationId())
			return nil
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "the definition id to go back to")
	cmd.Flags().BoolVar(&fast, "fast", false, fastHelp)
	return cmd
}

func (a *app) abortRolloutCommand() *cobra.Command {
	var fast bool
	cmd := &cobra.Command{
		Use:   "abort GUID [--fast]",
		Short: "Roll back to the healthy definition",
		Long: `Roll back to the healthy definition, as 'cork rollout rollback' without --to
does while a rollout is under way or failed. --fast as there.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			status, err := a.client().AbortRollout(ctx, args[0], fast)
			if err != nil {
				return err
			}
			if err := a.emitRolloutStatus(ctx, status); err != nil {
				return err
			}
			a.printOperationID(status.GetOperationId())
			return nil
		}),
	}
	cmd.Flags().BoolVar(&fast, "fast", false, fastHelp)
	return cmd
}
