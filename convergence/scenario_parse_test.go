package convergence_test

import (
	"errors"
	"fmt"
	"google.golang.org/protobuf/proto"
	"strconv"
	"strings"
	"time"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// A scenario is one testdata/*.txt file: a state, a line "----", and the
// plan Compute should make for it. doc.go describes the format.
type scenario struct {
	snapshot *convergence.Snapshot
	now      time.Time
	config   convergence.Config
	// state is the text above the separator, kept verbatim for -update.
	state    string
	expected string
}

const scenarioSeparator = "----"

var defaultScenarioNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func parseScenario(text string) (*scenario, error) {
	s := &scenario{
		snapshot: &convergence.Snapshot{},
		now:      defaultScenarioNow,
		config:   convergence.DefaultConfig(),
	}
	state, expected, found := strings.Cut(text, "\n"+scenarioSeparator+"\n")
	if !found {
		state = strings.TrimSuffix(strings.TrimRight(text, "\n"), "\n"+scenarioSeparator)
	}
	s.state, s.expected = state, expected

	// Times in the file are relative to now, so "now" is applied first.
	lines := strings.Split(state, "\n")
	for n, line := range lines {
		if fields, _ := splitFields(line); len(fields) > 0 && fields[0] == "now" {
			if len(fields) != 2 {
				return nil, fmt.Errorf("line %d: now takes one RFC 3339 time", n+1)
			}
			t, err := time.Parse(time.RFC3339, fields[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
			s.now = t
		}
	}
	desired := map[string]convergence.DesiredSchedule{}
	for n, line := range lines {
		fields, err := splitFields(line)
		if err == nil && len(fields) > 0 {
			err = s.parseLine(fields, desired)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %v", n+1, line, err)
		}
	}
	return s, nil
}

func (s *scenario) parseLine(fields []string, desired map[string]convergence.DesiredSchedule) error {
	switch fields[0] {
	case "now":
		return nil
	case "fresh":
		s.snapshot.FreshDomains = append(s.snapshot.FreshDomains, fields[1:]...)
		return nil
	case "partial":
		s.snapshot.Partial = true
		return nil
	case "config":
		return s.parseConfig(fields[1:])
	}
	if len(fields) < 2 {
		return fmt.Errorf("%s needs a name", fields[0])
	}
	attrs, err := parseAttrs(fields[2:])
	if err != nil {
		return err
	}
	switch fields[0] {
	case "cell":
		return s.parseCell(fields[1], attrs)
	case "desired":
		return s.parseDesired(fields[1], attrs, desired)
	case "actual":
		return s.parseActual(fields[1], attrs, desired)
	case "rollout":
		return s.parseRollout(fields[1], attrs)
	case "definition":
		return s.parseDefinition(fields[1], attrs)
	case "operation":
		return s.parseOperation(fields[1], attrs)
	case "freeze":
		return s.parseFreeze(fields[1], attrs)
	case "budgetgroup":
		g := &models.BudgetGroup{Name: fields[1], MaxUnavailable: attrs.string("max_unavailable", "")}
		if err := models.ValidateBudgetGroup("budgetgroup "+fields[1], g); err != nil {
			return err
		}
		s.snapshot.BudgetGroups = append(s.snapshot.BudgetGroups, g)
		return nil
	case "crash":
		return s.parseCrash(fields[1], attrs)
	case "check_failure":
		return s.parseCheckFailure(fields[1], attrs)
	}
	return fmt.Errorf("unknown keyword %q (want now, config, fresh, partial, cell, desired, actual, rollout, definition, operation, freeze, budgetgroup, crash or check_failure)", fields[0])
}

func (s *scenario) parseConfig(fields []string) error {
	attrs, err := parseAttrs(fields)
	if err != nil {
		return err
	}
	c := &s.config
	c.StaleUnclaimed = attrs.duration("stale_unclaimed", c.StaleUnclaimed)
	c.EvacuationGrace = attrs.duration("evacuation_grace", c.EvacuationGrace)
	c.CrashPolicy.ImmediateRestarts = attrs.int32("immediate_restarts", c.CrashPolicy.ImmediateRestarts)
	c.CrashPolicy.BaseDelay = attrs.duration("base_delay", c.CrashPolicy.BaseDelay)
	c.CrashPolicy.MaxDelay = attrs.duration("max_delay", c.CrashPolicy.MaxDelay)
	c.CrashPolicy.GiveUpAt = attrs.int32("give_up_at", c.CrashPolicy.GiveUpAt)
	c.Board = attrs.string("board", c.Board)
	c.OperationLeaseTTL = attrs.duration("operation_lease_ttl", c.OperationLeaseTTL)
	c.ScaleDownStabilization = attrs.duration("scale_down_stabilization", c.ScaleDownStabilization)
	c.MaxRolloutsInFlight = attrs.int32("max_rollouts_in_flight", c.MaxRolloutsInFlight)
	c.BlockedAlertAfter = attrs.duration("blocked_alert_after", c.BlockedAlertAfter)
	c.MaxStartsPerCellPerSecond = attrs.int32("max_starts_per_cell_per_second", c.MaxStartsPerCellPerSecond)
	c.QuarantineOnCrashSpike = attrs.bool("quarantine_on_crash_spike", c.QuarantineOnCrashSpike)
	c.CrashMemory.Window = attrs.duration("crash_window", c.CrashMemory.Window)
	c.CrashMemory.SpikeMin = attrs.int32("spike_min", c.CrashMemory.SpikeMin)
	c.CrashMemory.SpikeFactor = attrs.int32("spike_factor", c.CrashMemory.SpikeFactor)
	return attrs.done()
}

func (s *scenario) parseCell(id string, a *attrs) error {
	var unreadStarts []int64
	for _, ago := range a.list("unread_starts") {
		d, err := time.ParseDuration(ago)
		if err != nil {
			return fmt.Errorf("unread_starts: want durations before now, e.g. -500ms, got %q", ago)
		}
		unreadStarts = append(unreadStarts, s.now.Add(d).UnixNano())
	}
	s.snapshot.Cells = append(s.snapshot.Cells, convergence.CellRow{
		CellID: id,
		Zone:   a.string("zone", ""),
		Capacity: convergence.Resources{
			MemoryMB:  a.int32("memory", 8192),
			DiskMB:    a.int32("disk", 16384),
			Instances: a.int32("instances", 100),
		},
		PlacementTags: a.list("tags"),
		ExpiresAt:     s.now.Add(a.duration("expires", 30*time.Second)).UnixNano(),
		Draining:      a.bool("draining", false),
		Quarantined:   a.bool("quarantined", false),
		UnreadUse: convergence.Resources{
			MemoryMB:  a.int32("unread_memory", 0),
			DiskMB:    a.int32("unread_disk", 0),
			Instances: a.int32("unread_instances", 0),
		},
		UnreadStarts: unreadStarts,
	})
	if cleared, ok := a.take("cleared"); ok {
		d, err := time.ParseDuration(cleared)
		if err != nil {
			return fmt.Errorf("cleared: want a duration before now, e.g. -2m, got %q", cleared)
		}
		s.snapshot.Cells[len(s.snapshot.Cells)-1].QuarantineClearedAt = s.now.Add(d).UnixNano()
	}
	return a.done()
}

func (s *scenario) parseDesired(guid string, a *attrs, desired map[string]convergence.DesiredSchedule) error {
	var strategy *models.UpdateStrategy
	for _, key := range []string{"surge", "unavailable", "min_ready", "deadline", "auto_revert", "history"} {
		if _, ok := a.values[key]; ok {
			strategy = &models.UpdateStrategy{
				MaxSurge:           a.string("surge", ""),
				MaxUnavailable:     a.string("unavailable", ""),
				MinReadyMs:         a.duration("min_ready", 0).Milliseconds(),
				ProgressDeadlineMs: a.duration("deadline", 0).Milliseconds(),
				AutoRevert:         a.bool("auto_revert", false),
				HistoryLimit:       a.int32("history", 0),
			}
			break
		}
	}
	var budget *models.DisruptionBudget
	if v, ok := a.take("budget"); ok {
		budget = &models.DisruptionBudget{MaxUnavailable: v}
	}
	if g, ok := a.take("budget_group"); ok {
		if budget == nil {
			budget = &models.DisruptionBudget{}
		}
		budget.Group = g
	}
	active := a.string("definition", "v1")
	autoscaling, autoscaler, err := s.parseAutoscaling(a)
	if err != nil {
		return fmt.Errorf("desired %s: %w", guid, err)
	}
	s.snapshot.Desired = append(s.snapshot.Desired, convergence.DesiredSchedule{
		ProcessGuid:         guid,
		Domain:              a.string("domain", "apps"),
		Instances:           a.int32("instances", 1),
		PlacementTags:       a.list("tags"),
		ActiveDefinitionID:  active,
		HealthyDefinitionID: a.string("healthy", active),
		UpdateStrategy:      strategy,
		DisruptionBudget:    budget,
		MemoryMB:            a.int32("memory", 256),
		DiskMB:              a.int32("disk", 512),
		Autoscaling:         autoscaling,
		Autoscaler:          autoscaler,
		ModificationIndex:   int64(a.int32("mod", 1)),
	})
	desired[guid] = s.snapshot.Desired[len(s.snapshot.Desired)-1]
	return a.done()
}

func (s *scenario) parseActual(key string, a *attrs, desired map[string]convergence.DesiredSchedule) error {
	guid, indexText, ok := strings.Cut(key, "/")
	index, err := strconv.ParseInt(indexText, 10, 32)
	if !ok || err != nil {
		return fmt.Errorf("actual %q: want process_guid/index", key)
	}
	// Unspecified columns default to the DesiredLRP's, when it was
	// declared above.
	d := convergence.DesiredSchedule{Domain: "apps", ActiveDefinitionID: "v1", MemoryMB: 256, DiskMB: 512}
	if declared, ok := desired[guid]; ok {
		d = declared
	}
	state, ok := models.ActualLRP_State_value[a.string("state", "")]
	if !ok {
		return fmt.Errorf("actual %s: state must be one of UNCLAIMED, CLAIMED, RUNNING, CRASHED", key)
	}
	presence, ok := models.ActualLRP_Presence_value[a.string("presence", "ORDINARY")]
	if !ok {
		return fmt.Errorf("actual %s: presence must be one of ORDINARY, EVACUATING, SUSPECT, RETIRING", key)
	}
	s.snapshot.Actual = append(s.snapshot.Actual, convergence.ActualRow{
		ProcessGuid:       guid,
		Index:             int32(index),
		Presence:          models.ActualLRP_Presence(presence),
		State:             models.ActualLRP_State(state),
		Domain:            a.string("domain", d.Domain),
		CellID:            a.string("cell", ""),
		InstanceGuid:      a.string("instance", ""),
		DefinitionID:      a.string("definition", d.ActiveDefinitionID),
		CrashCount:        a.int32("crashes", 0),
		Since:             s.now.Add(a.duration("since", 0)).UnixNano(),
		PlacementError:    a.string("error", ""),
		CrashReason:       a.string("crash_reason", ""),
		Routable:          a.bool("routable", state == int32(models.ActualLRP_RUNNING)),
		Occupied:          a.bool("occupied", false),
		StopRequested:     a.bool("stop", false),
		ModificationIndex: int64(a.int32("mod", 1)),
		MemoryMB:          a.int32("memory", d.MemoryMB),
		DiskMB:            a.int32("disk", d.DiskMB),
	})
	return a.done()
}

// parseAutoscaling reads a desired LRP's autoscaling:
// autoscale=MIN-MAX@READY_TARGET (MAX -1: no limit), window=DURATION, and
// the recommendations its autoscaler kept, recommended=AT:N,AT:N (times
// relative to now, oldest first), and decided=N, the occupancy of its last
// decision (none: no decision yet), made under the same settings unless
// decided_under=MIN-MAX@READY_TARGET says which.
func (s *scenario) parseAutoscaling(a *attrs) (*models.Autoscaling, *models.AutoscalerStatus, error) {
	spec, ok := a.take("autoscale")
	if !ok {
		return nil, nil, nil
	}
	bounds, target, ok := strings.Cut(spec, "@")
	least, most, ok2 := strings.Cut(bounds, "-")
	if strings.HasPrefix(bounds, "-") || !ok || !ok2 {
		return nil, nil, fmt.Errorf("autoscale must be MIN-MAX@READY_TARGET, e.g. 2-10@0.5, got %q", spec)
	}
	lo, err1 := strconv.ParseInt(least, 10, 32)
	hi, err2 := strconv.ParseInt(most, 10, 32)
	ready, err3 := strconv.ParseFloat(target, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, nil, fmt.Errorf("autoscale %q: %w", spec, err)
	}
	autoscaling := &models.Autoscaling{
		Enabled: true, Min: int32(lo), Max: int32(hi),
		Policy: &models.AutoscalingPolicy{
			Type: models.RoomOccupancyPolicy,
			Parameters: &models.AutoscalingPolicyParameters{
				RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: ready},
			},
		},
		ScaleDownStabilizationMs: a.duration("window", 0).Milliseconds(),
	}
	var status *models.AutoscalerStatus
	if _, decided := a.values["decided"]; decided {
		last := &models.AutoscalerDecision{Occupied: a.int32("decided", 0), Min: int32(lo), Max: int32(hi), ReadyTarget: ready}
		if under, given := a.take("decided_under"); given {
			if _, err := fmt.Sscanf(under, "%d-%d@%g", &last.Min, &last.Max, &last.ReadyTarget); err != nil {
				return nil, nil, fmt.Errorf("decided_under must be MIN-MAX@READY_TARGET, got %q: %w", under, err)
			}
		}
		status = &models.AutoscalerStatus{LastDecision: last}
	}
	for _, rec := range a.list("recommended") {
		at, count, ok := strings.Cut(rec, ":")
		n, err := strconv.ParseInt(count, 10, 32)
		since, err2 := time.ParseDuration(at)
		if !ok || err != nil || err2 != nil {
			return nil, nil, fmt.Errorf("recommended: want AT:N, e.g. -30s:8, got %q", rec)
		}
		if status == nil {
			status = &models.AutoscalerStatus{}
		}
		status.Recommendations = append(status.Recommendations, &models.AutoscalerRecommendation{
			At: s.now.Add(since).UnixNano(), Wanted: int32(n),
		})
	}
	return autoscaling, status, nil
}

// parseRollout reads an unsettled rollout record.
func (s *scenario) parseRollout(guid string, a *attrs) error {
	state, ok := models.RolloutStatus_State_value[a.string("state", "PROGRESSING")]
	if !ok {
		return fmt.Errorf("rollout %s: state must be one of NONE, PROGRESSING, COMPLETE, FAILED, REVERTED, HOLDING, HELD", guid)
	}
	at := func(key string) int64 {
		if _, given := a.values[key]; !given {
			return 0
		}
		return s.now.Add(a.duration(key, 0)).UnixNano()
	}
	s.snapshot.Rollouts = append(s.snapshot.Rollouts, convergence.RolloutRow{
		ProcessGuid:        guid,
		State:              models.RolloutStatus_State(state),
		Reason:             a.string("reason", ""),
		DefinitionID:       a.string("definition", "v2"),
		FailedDefinitionID: a.string("failed", ""),
		StartedAt:          at("started"),
		ProgressAt:         at("progress"),
		FinishedAt:         at("finished"),
		UpdatedInstances:   a.int32("updated", 0),
		InFlight:           a.int32("inflight", 0),
		ModificationIndex:  int64(a.int32("mod", 1)),
		OperationID:        a.string("op", ""),
		Fast:               a.bool("fast", false),
		QueuePosition:      a.int32("queue_position", 0),
		QueueReason:        a.string("queue_reason", ""),
		FreezeExemption:    a.string("exempt", ""),
	})
	s.snapshot.Rollouts[len(s.snapshot.Rollouts)-1].BlockedBy = s.parseBlockedBy(a)
	rec := &s.snapshot.Rollouts[len(s.snapshot.Rollouts)-1]
	// A record is admitted when it started (a rollout under way before
	// the governor) unless the scenario says when, or queued=true.
	rec.AdmittedAt = rec.StartedAt
	if _, given := a.values["admitted"]; given {
		rec.AdmittedAt = at("admitted")
	}
	if a.bool("queued", false) {
		rec.AdmittedAt = 0
	}
	if _, staged := a.values["stage"]; staged {
		stage, err := s.parseStage(a, at)
		if err != nil {
			return fmt.Errorf("rollout %s: %w", guid, err)
		}
		s.snapshot.Rollouts[len(s.snapshot.Rollouts)-1].Stage = stage
	}
	judgement, err := s.parseJudgement(a, at, s.snapshot.Rollouts[len(s.snapshot.Rollouts)-1].DefinitionID)
	if err != nil {
		return fmt.Errorf("rollout %s: %w", guid, err)
	}
	s.snapshot.Rollouts[len(s.snapshot.Rollouts)-1].Judgement = judgement
	return a.done()
}

// parseJudgement reads a rollout's judgement, nil when none of its
// attributes is given: analysis=INTERVAL (a judged rollout, one board
// check), on_failure=, on_marginal=, bake=DURATION, bake_started=,
// held=, verdicts_from= (times relative to now), and its latest verdict
// verdict=PASS|MARGINAL|FAIL made at verdict_at= for verdict_definition=
// (default: the rollout's definition); baseline=true asks for baseline
// instances.
func (s *scenario) parseJudgement(a *attrs, at func(string) int64, rolloutDefinition string) (*models.RolloutJudgement, error) {
	given := false
	for _, key := range []string{"analysis", "on_failure", "on_marginal", "bake", "bake_started", "held", "verdicts_from", "verdict", "baseline"} {
		if _, ok := a.values[key]; ok {
			given = true
		}
	}
	if !given {
		return nil, nil
	}
	j := &models.RolloutJudgement{
		OnFailure:     a.string("on_failure", ""),
		OnMarginal:    a.string("on_marginal", ""),
		BakeMs:        a.duration("bake", 0).Milliseconds(),
		BakeStartedAt: at("bake_started"),
		HeldAt:        at("held"),
		VerdictsFrom:  at("verdicts_from"),
		Baseline:      a.bool("baseline", false),
	}
	if _, judged := a.values["analysis"]; judged {
		j.Analysis = &models.RolloutAnalysis{IntervalMs: a.duration("analysis", 0).Milliseconds(), Checks: []*models.AnalysisCheck{
			{Name: "crashes", Provider: models.AnalysisProviderBoard, Signal: "crash_rate", Max: proto.Float64(0.1)},
		}}
	}
	if outcome, ok := a.take("verdict"); ok {
		value, known := models.AnalysisOutcome_value[outcome]
		if !known {
			return nil, fmt.Errorf("verdict must be PASS, MARGINAL or FAIL, got %q", outcome)
		}
		definition := a.string("verdict_definition", rolloutDefinition)
		j.Verdicts = []*models.AnalysisVerdict{{
			Outcome: models.AnalysisOutcome(value), At: at("verdict_at"), DefinitionId: definition, BaselineDefinitionId: "v1",
			During: models.AnalysisDuringRolling,
			Checks: []*models.AnalysisCheckResult{{Name: "crashes", Outcome: models.AnalysisOutcome(value), Reason: "crashes " + outcome}},
		}}
	}
	return j, nil
}

// parseStage reads a staged phase: stage=PRIOR-TARGET (percents), and
// optionally rate=P%/DURATION, seed, phase=START (relative), watching=T,
// paused=T with pause_reason, paused_for=DURATION (paused before).
func (s *scenario) parseStage(a *attrs, at func(string) int64) (*models.RolloutStage, error) {
	prior, target, ok := strings.Cut(a.string("stage", ""), "-")
	if !ok {
		return nil, fmt.Errorf("stage must be PRIOR-TARGET, e.g. 0-50")
	}
	stage := &models.RolloutStage{Seed: a.string("seed", "")}
	var err error
	if stage.PriorPercent, err = strconv.ParseFloat(prior, 64); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	if stage.TargetPercent, err = strconv.ParseFloat(target, 64); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	if rate := a.string("rate", ""); rate != "" {
		percent, per, ok := strings.Cut(rate, "%/")
		if !ok {
			return nil, fmt.Errorf("rate must be P%%/DURATION, e.g. 10%%/5s")
		}
		p, err := strconv.ParseFloat(percent, 64)
		if err != nil {
			return nil, fmt.Errorf("rate: %w", err)
		}
		d, err := time.ParseDuration(per)
		if err != nil {
			return nil, fmt.Errorf("rate: %w", err)
		}
		stage.SafeRate = &models.SafeRate{Percent: p, PerMs: d.Milliseconds()}
	}
	stage.PhaseStartedAt = at("phase")
	stage.WatchingSince = at("watching")
	if _, paused := a.values["paused"]; paused {
		stage.Paused, stage.PausedAt = true, at("paused")
		stage.PauseReason = a.string("pause_reason", "")
	}
	stage.PausedNanos = int64(a.duration("paused_for", 0))
	return stage, nil
}

// parseBlockedBy reads a record's blocked_by (blocked=REASON
// blocked_since=-8m blocked_estimate=+2m blocked_detail="..."), nil
// without blocked=.
func (s *scenario) parseBlockedBy(a *attrs) *models.BlockedBy {
	reason := a.string("blocked", "")
	if reason == "" {
		return nil
	}
	at := func(key string) int64 {
		if _, given := a.values[key]; !given {
			return 0
		}
		return s.now.Add(a.duration(key, 0)).UnixNano()
	}
	return &models.BlockedBy{Reason: reason, Detail: a.string("blocked_detail", ""), Since: at("blocked_since"), Estimate: at("blocked_estimate")}
}

// parseOperation reads an operation that has not ended.
func (s *scenario) parseOperation(id string, a *attrs) error {
	kind, ok := models.Operation_Kind_value[a.string("kind", "UPDATE_DEFINITION")]
	if !ok {
		return fmt.Errorf("operation %s: unknown kind", id)
	}
	status, ok := models.Operation_Status_value[a.string("status", "IN_PROGRESS")]
	if !ok {
		return fmt.Errorf("operation %s: unknown status", id)
	}
	op := convergence.OperationRow{
		ID:                id,
		ProcessGuid:       a.string("lrp", "web"),
		Sequence:          int64(a.int32("seq", 1)),
		Kind:              models.Operation_Kind(kind),
		Status:            models.Operation_Status(status),
		DefinitionID:      a.string("definition", ""),
		DefinitionStored:  a.bool("stored", true),
		MemoryMB:          a.int32("memory", 0),
		DiskMB:            a.int32("disk", 0),
		LeaseOwner:        a.string("owner", ""),
		ModificationIndex: int64(a.int32("mod", 1)),
	}
	if _, given := a.values["expires"]; given {
		op.LeaseExpiresAt = s.now.Add(a.duration("expires", 0)).UnixNano()
	}
	op.BlockedBy = s.parseBlockedBy(a)
	s.snapshot.Operations = append(s.snapshot.Operations, op)
	return a.done()
}

// parseDefinition reads a stored definition of an LRP with a rollout
// record; a file lists each LRP's definitions newest first.
func (s *scenario) parseDefinition(key string, a *attrs) error {
	guid, id, ok := strings.Cut(key, "/")
	if !ok {
		return fmt.Errorf("definition %q: want process_guid/definition_id", key)
	}
	s.snapshot.Definitions = append(s.snapshot.Definitions, convergence.DefinitionRow{
		ProcessGuid: guid, DefinitionID: id, CreatedAt: s.now.Add(a.duration("created", 0)).UnixNano(),
		MemoryMB: a.int32("memory", 256), DiskMB: a.int32("disk", 512),
	})
	return a.done()
}

// attrs are a line's key=value fields. Each getter consumes its key; done
// reports the first bad value or a key nobody asked for.
type attrs struct {
	values map[string]string
	err    error
}

func parseAttrs(fields []string) (*attrs, error) {
	a := &attrs{values: map[string]string{}}
	for _, f := range fields {
		key, value, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not key=value", f)
		}
		if _, dup := a.values[key]; dup {
			return nil, fmt.Errorf("%s given twice", key)
		}
		a.values[key] = value
	}
	return a, nil
}

func (a *attrs) take(key string) (string, bool) {
	v, ok := a.values[key]
	delete(a.values, key)
	return v, ok
}

func (a *attrs) string(key, def string) string {
	if v, ok := a.take(key); ok {
		return v
	}
	return def
}

func (a *attrs) list(key string) []string {
	if v, ok := a.take(key); ok && v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

func (a *attrs) int32(key string, def int32) int32 {
	v, ok := a.take(key)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %v", key, err)
	}
	return int32(n)
}

func (a *attrs) bool(key string, def bool) bool {
	v, ok := a.take(key)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %v", key, err)
	}
	return b
}

func (a *attrs) duration(key string, def time.Duration) time.Duration {
	v, ok := a.take(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %v", key, err)
	}
	return d
}

func (a *attrs) done() error {
	if a.err != nil {
		return a.err
	}
	for key := range a.values {
		return fmt.Errorf("unknown attribute %q", key)
	}
	return nil
}

// splitFields splits a line at spaces, keeping "double quoted" values
// (Go syntax) whole; "#" starts a comment outside quotes.
func splitFields(line string) ([]string, error) {
	var fields []string
	var field strings.Builder
	inField := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '#':
			i = len(line)
		case c == ' ' || c == '\t':
			if inField {
				fields = append(fields, field.String())
				field.Reset()
				inField = false
			}
		case c == '"':
			quoted, err := strconv.QuotedPrefix(line[i:])
			if err != nil {
				return nil, fmt.Errorf("unterminated quote")
			}
			value, _ := strconv.Unquote(quoted)
			field.WriteString(value)
			inField = true
			i += len(quoted) - 1
		default:
			field.WriteByte(c)
			inField = true
		}
	}
	if inField {
		fields = append(fields, field.String())
	}
	return fields, nil
}

// parseFreeze reads a freeze window: one-off with from= and until= (times
// relative to now), or recurring with schedule=, duration= and zone=.
func (s *scenario) parseFreeze(name string, a *attrs) error {
	w := &models.FreezeWindow{Name: name}
	if schedule := a.string("schedule", ""); schedule != "" {
		w.Schedule = schedule
		w.DurationMs = a.duration("duration", 0).Milliseconds()
		w.TimeZone = a.string("zone", "")
	} else {
		w.From = s.now.Add(a.duration("from", 0)).UTC().Format(time.RFC3339)
		w.Until = s.now.Add(a.duration("until", 0)).UTC().Format(time.RFC3339)
	}
	if err := models.ValidateFreezeWindow("freeze "+name, w); err != nil {
		return err
	}
	s.snapshot.FreezeWindows = append(s.snapshot.FreezeWindows, w)
	return a.done()
}

// parseCrash reads one remembered crash of an LRP's definition on a cell,
// at a time relative to now.
// parseCheckFailure reads a failing health check a cell reported:
// check_failure GUID/INDEX definition=v2 instance=g3 output="..." at=-5s
// since=-17s (times relative to now).
func (s *scenario) parseCheckFailure(key string, a *attrs) error {
	guid, indexText, ok := strings.Cut(key, "/")
	index, err := strconv.ParseInt(indexText, 10, 32)
	if !ok || err != nil {
		return fmt.Errorf("check_failure %q: want process_guid/index", key)
	}
	s.snapshot.CheckFailures = append(s.snapshot.CheckFailures, models.CheckFailure{
		ProcessGuid:  guid,
		Index:        int32(index),
		DefinitionID: a.string("definition", "v1"),
		InstanceGuid: a.string("instance", ""),
		Output:       a.string("output", ""),
		At:           s.now.Add(a.duration("at", 0)).UnixNano(),
		Since:        s.now.Add(a.duration("since", 0)).UnixNano(),
	})
	return a.done()
}

func (s *scenario) parseCrash(guid string, a *attrs) error {
	s.snapshot.Crashes = append(s.snapshot.Crashes, convergence.CrashRow{
		ProcessGuid:  guid,
		DefinitionID: a.string("definition", "v1"),
		CellID:       a.string("cell", ""),
		At:           s.now.Add(a.duration("at", 0)).UnixNano(),
	})
	return a.done()
}
