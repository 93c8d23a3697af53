package convergence

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/corkboard/corkboard/models"
)

// MaxPlannedPasses bounds a dry run: a rollout that has not completed, or
// come to rest, after this many passes is reported as stopped there.
const MaxPlannedPasses = 10_000

// DryRun is what PlanRollout needs: the live state of one LRP and the
// update that would be made to it.
type DryRun struct {
	// Snapshot is the LRP's targeted snapshot: its rows, its unsettled
	// rollout record, and every cell with the usage of every other LRP
	// (DESIGN §3: placement from a partial view overcommits cells).
	Snapshot    *Snapshot
	ProcessGuid string
	// Definitions are the LRP's stored definitions, newest first; the
	// snapshot lists them only while its rollout record is unsettled.
	Definitions []DefinitionRow
	Update      *models.DesiredLRPUpdate
	// ReadyAfter is how long each new instance takes, once placed, to be
	// RUNNING and routable.
	ReadyAfter time.Duration
	// Now is the moment of the update; the rollout plan's times count from it.
	Now time.Time
	// Config is the board's planner configuration, RolloutInterval how
	// often the board gives an LRP whose rollout is under way a pass
	// (DefaultRolloutInterval when zero).
	Config          Config
	RolloutInterval time.Duration
}

// PlanRollout is the dry run of an update: it applies the update to the
// snapshot in memory as the store would, then plays the rollout pass by
// pass with the planner itself (Compute), the in-memory store (ApplyPlan)
// and simulated reps, and says what each pass would start and stop. It
// does no I/O.
//
// The simulated reps claim a placed instance at once; it runs, routable,
// ReadyAfter after it was placed, and never crashes; a RETIRING instance
// told to stop is gone at the next pass. Nothing else changes meanwhile:
// no other LRP, no cell coming or going. Passes come every
// RolloutInterval while the rollout is under way, as on the board, but
// only the ones at which something changes are played: the next is the
// first tick at or after the earliest of an instance becoming ready, a
// stopped instance leaving, or the planner's own wake-up (min_ready, a
// staged phase growing, the progress deadline).
//
// Worked example: 4 instances on v1, default strategy (max_surge 1,
// max_unavailable 0), min_ready 0, ready after 10 s, interval 1 s:
//
//  1. +0s: index 0 turns RETIRING, its replacement is placed; 4 available,
//     1 surged.
//  2. +10s: the replacement runs: index 0's old instance is told to stop
//     and index 1's replacement starts in the same pass.
//  3. +20s and +30s: the same for indices 1 → 2 and 2 → 3.
//  4. +40s: index 3's replacement runs, its old instance is told to stop,
//     every index runs v2: COMPLETE. Projected: 40 s (4 × 10 s).
//
// With ready after 0 each replacement runs by the next tick: passes at
// 0, 1, 2, 3 and 4 s, projected 4 s.
//
// The rollout plan stops short of COMPLETE when the rollout would fail (progress
// deadline), hold (a staged phase below 100%), or come to rest with an
// instance that fits no cell, and says why. An update that activates no
// new definition plans no rollout. queue and validate are not simulated:
// the rollout plan is the rollout as it runs once the update applies.
func PlanRollout(in DryRun) (*models.RolloutPlan, error) {
	if in.RolloutInterval <= 0 {
		in.RolloutInterval = DefaultRolloutInterval
	}
	// Operations are leased to a board; a dry run owns none.
	in.Config.Board = ""
	d := in.Snapshot.DesiredOf(in.ProcessGuid)
	if d == nil {
		return nil, models.NewError(models.Error_ResourceNotFound, "desired_lrp %q not found", in.ProcessGuid)
	}
	update := in.Update
	if update == nil {
		update = &models.DesiredLRPUpdate{}
	}
	if update.Instances != nil && models.AutoscalingAfter(scheduleLRP(d), update).IsEnabled() {
		return nil, models.ErrInvalidField("update.instances", models.ErrInstancesAutoscaled)
	}
	if update.Staged != nil && update.Definition == nil {
		return nil, models.ErrInvalidField("update.staged", "requires a definition")
	}
	state, rolloutPlan := applyUpdateInMemory(in, d, update)
	strategy, err := models.ResolveRolloutStrategy(rolloutPlan.Instances, state.Desired[0].UpdateStrategy)
	if err != nil {
		return nil, models.ErrInvalidField("update.update_strategy", err.Error())
	}
	rolloutPlan.MaxSurge, rolloutPlan.MaxUnavailable = strategy.MaxSurge, strategy.MaxUnavailable
	rolloutPlan.MinReadyMs = strategy.MinReady.Milliseconds()
	rolloutPlan.ReadyAfterMs = in.ReadyAfter.Milliseconds()
	if rolloutPlan.ToDefinitionId == rolloutPlan.FromDefinitionId {
		rolloutPlan.StoppedReason = fmt.Sprintf("no rollout: the update changes no definition (%s stays active)", rolloutPlan.FromDefinitionId)
		return rolloutPlan, nil
	}
	sim := &dryRun{in: in, to: rolloutPlan.ToDefinitionId, minReady: strategy.MinReady}
	sim.play(state, rolloutPlan)
	return rolloutPlan, nil
}

// scheduleLRP is as much of a DesiredLRP as models.ApplyUpdate reads.
func scheduleLRP(d *DesiredSchedule) *models.DesiredLRP {
	return &models.DesiredLRP{ProcessGuid: d.ProcessGuid, Instances: d.Instances, Autoscaling: d.Autoscaling,
		ActiveDefinitionId: d.ActiveDefinitionID}
}

// applyUpdateInMemory is the state right after the update, as
// UpdateDesiredLRP (db/sqldb/update.go) would leave it, both deciding with
// models.ApplyUpdate: the LRP with its new strategy, instances and
// autoscaling, the new definition stored and active with a fresh rollout
// record (StartedRollout, in the staged phase the update starts), the
// instances a scale-up adds (UNCLAIMED, on the new definition) and those a
// scale-down deletes (UNCLAIMED ones at the indices beyond the count). It
// returns the rollout plan's header too.
func applyUpdateInMemory(in DryRun, before *DesiredSchedule, update *models.DesiredLRPUpdate) (*Snapshot, *models.RolloutPlan) {
	now := in.Now.UnixNano()
	guid := before.ProcessGuid
	s := *in.Snapshot
	s.Operations = nil
	// The reps keep their cells present: a cell present now stays so.
	s.Cells = slices.Clone(s.Cells)
	for i := range s.Cells {
		if c := &s.Cells[i]; c.ExpiresAt > now {
			c.ExpiresAt = math.MaxInt64
		}
	}
	d := *before
	s.Desired = []DesiredSchedule{d}
	lrp := &s.Desired[0]
	change := models.ApplyUpdate(scheduleLRP(before), update, now)
	if update.UpdateStrategy != nil {
		lrp.UpdateStrategy = update.UpdateStrategy
	}
	lrp.Instances = change.ScaleTo
	if update.Autoscaling != nil {
		lrp.Autoscaling = update.Autoscaling
	}
	switch {
	case change.Autoscaler.Clear:
		lrp.Autoscaler = nil
	case change.Autoscaler.Seed != nil:
		lrp.Autoscaler = change.Autoscaler.Seed
	}
	rolloutPlan := &models.RolloutPlan{
		ProcessGuid: guid, FromDefinitionId: before.ActiveDefinitionID,
		ToDefinitionId: change.ActiveDefinitionID, Instances: lrp.Instances,
	}

	s.Definitions = slices.DeleteFunc(slices.Clone(s.Definitions), func(def DefinitionRow) bool { return def.ProcessGuid == guid })
	s.Definitions = append(s.Definitions, in.Definitions...)
	if def := update.Definition; def != nil {
		to := change.DefinitionID
		if !slices.ContainsFunc(s.Definitions, func(row DefinitionRow) bool { return row.DefinitionID == to }) {
			s.Definitions = append([]DefinitionRow{{
				ProcessGuid: guid, DefinitionID: to, CreatedAt: now, MemoryMB: def.MemoryMb, DiskMB: def.DiskMb,
			}}, s.Definitions...)
		}
		if change.Activated {
			lrp.ActiveDefinitionID, lrp.MemoryMB, lrp.DiskMB = to, def.MemoryMb, def.DiskMb
			record := StartedRollout(guid, to, RollingReason(before.ActiveDefinitionID, to), "", change.Stage, now)
			record.Judgement = change.Judgement
			record.FreezeExemption = change.FreezeExemption
			s.Rollouts = nil
			for _, rec := range in.Snapshot.Rollouts {
				if rec.ProcessGuid == guid {
					record.ModificationIndex = rec.ModificationIndex
				}
			}
			record.ModificationIndex++
			s.Rollouts = []RolloutRow{record}
		}
	}

	s.Actual = nil
	for _, r := range in.Snapshot.Actual {
		if r.ProcessGuid == guid && r.Presence == ordinary && r.State == unclaimed && r.Index >= change.ScaleTo {
			continue
		}
		s.Actual = append(s.Actual, r)
	}
	for index := change.ScaleFrom; index < change.ScaleTo; index++ {
		s.Actual = append(s.Actual, ActualRow{
			ProcessGuid: guid, Index: index, Presence: ordinary, State: unclaimed, Domain: lrp.Domain,
			DefinitionID: lrp.ActiveDefinitionID, Since: now, ModificationIndex: 1,
			MemoryMB: lrp.MemoryMB, DiskMB: lrp.DiskMB,
		})
	}
	slices.SortFunc(s.Actual, func(a, b ActualRow) int { return compareRows(&a, &b) })
	return &s, rolloutPlan
}

// dryRun plays one rollout.
type dryRun struct {
	in       DryRun
	to       string
	minReady time.Duration
}

func (r *dryRun) play(s *Snapshot, rolloutPlan *models.RolloutPlan) {
	start := r.in.Now
	t := start
	for range MaxPlannedPasses {
		computed := Compute(s, t, r.in.Config)
		after, err := ApplyPlan(s, computed, t)
		if err != nil {
			// Unreachable: nobody else writes to the simulated store.
			rolloutPlan.StoppedReason = "the simulation failed: " + err.Error()
			break
		}
		pass := r.describePass(s, after, computed, t.Sub(start))
		rolloutPlan.ProjectedMs = pass.AtMs
		ended, why := r.ended(after, computed)
		if len(pass.Reasons) > 0 || ended {
			rolloutPlan.Passes = append(rolloutPlan.Passes, pass)
		}
		if ended {
			rolloutPlan.Completes, rolloutPlan.StoppedReason = why == "", why
			return
		}
		next, rest := r.nextPass(after, computed, t)
		if rest != "" {
			rolloutPlan.Passes = appendLast(rolloutPlan.Passes, pass)
			rolloutPlan.StoppedReason = rest
			return
		}
		t = next
		s = r.playReps(after, t)
	}
	if rolloutPlan.StoppedReason == "" {
		rolloutPlan.StoppedReason = fmt.Sprintf("not complete after %d passes", MaxPlannedPasses)
	}
}

// appendLast appends the pass the rollout plan stops at unless it is there.
func appendLast(passes []*models.RolloutPlanPass, last *models.RolloutPlanPass) []*models.RolloutPlanPass {
	if n := len(passes); n > 0 && passes[n-1] == last {
		return passes
	}
	return append(passes, last)
}

// ended says whether the pass ended the rollout: completed (why is ""),
// failed or reverted (why says so).
func (r *dryRun) ended(after *Snapshot, computed *Plan) (bool, string) {
	d := after.DesiredOf(r.in.ProcessGuid)
	if d == nil || d.ActiveDefinitionID != r.to {
		return true, "the rollout fails and the healthy definition is active again"
	}
	for _, w := range computed.Writes.Rollouts {
		if w.ProcessGuid != r.in.ProcessGuid {
			continue
		}
		switch rec := w.Record; rec.State {
		case models.RolloutStatus_COMPLETE:
			return true, ""
		case models.RolloutStatus_FAILED:
			return true, "the rollout fails: " + rec.Reason
		case models.RolloutStatus_REVERTED:
			return true, "the rollout fails and reverts: " + rec.Reason
		}
	}
	return false, ""
}

// nextPass is when the next pass that can change anything comes, or why
// none will: the first tick of the rollout interval at or after the
// earliest of a placed instance becoming ready, a stopped one leaving (at
// the next tick), and the planner's wake-up.
func (r *dryRun) nextPass(after *Snapshot, computed *Plan, t time.Time) (time.Time, string) {
	interval := r.in.RolloutInterval
	var next time.Time
	consider := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	for i := range after.Actual {
		row := &after.Actual[i]
		switch {
		case row.Presence == retiring && row.StopRequested:
			consider(t.Add(interval))
		case r.starting(row):
			consider(time.Unix(0, row.Since).Add(r.in.ReadyAfter))
		}
	}
	if next.IsZero() {
		// Nothing is on its way: only the passing of time can move the
		// rollout, unless it is held or stuck.
		if why := r.atRest(after); why != "" {
			return time.Time{}, why
		}
	}
	if !computed.NextWake.IsZero() {
		consider(computed.NextWake)
	}
	if next.IsZero() {
		return time.Time{}, "nothing more happens: " + r.recordReason(after)
	}
	// The first tick at or after next, and a tick later than t at least.
	ticks := (next.Sub(r.in.Now) + interval - 1) / interval
	at := r.in.Now.Add(ticks * interval)
	if !at.After(t) {
		at = t.Add(interval)
	}
	return at, ""
}

// starting: a placed instance that the simulated reps have not started.
func (r *dryRun) starting(row *ActualRow) bool {
	return row.CellID != "" && (row.State == unclaimed || row.State == claimed)
}

// atRest says why the rollout cannot move by itself with nothing on its
// way: an instance fits no cell, or the staged phase holds. "" when
// neither.
func (r *dryRun) atRest(after *Snapshot) string {
	for i := range after.Actual {
		row := &after.Actual[i]
		if row.State == unclaimed && row.CellID == "" && row.PlacementError != "" {
			return fmt.Sprintf("index %d cannot be placed: %s", row.Index, row.PlacementError)
		}
	}
	for _, rec := range after.Rollouts {
		if rec.ProcessGuid == r.in.ProcessGuid && rec.State == models.RolloutStatus_HOLDING {
			return "staged phase " + rec.Reason
		}
	}
	return ""
}

func (r *dryRun) recordReason(after *Snapshot) string {
	for _, rec := range after.Rollouts {
		if rec.ProcessGuid == r.in.ProcessGuid {
			return rec.Reason
		}
	}
	return "the rollout does not move"
}

// playReps is the simulated reps at time t: RETIRING instances told to
// stop are gone, placed instances are claimed, and those placed
// ReadyAfter ago or more run, routable, since then.
func (r *dryRun) playReps(s *Snapshot, t time.Time) *Snapshot {
	next := *s
	next.Actual = make([]ActualRow, 0, len(s.Actual))
	for _, row := range s.Actual {
		switch {
		case row.Presence == retiring && row.StopRequested:
			continue
		case r.starting(&row):
			row.ModificationIndex++
			row.State = claimed
			if readyAt := time.Unix(0, row.Since).Add(r.in.ReadyAfter); !readyAt.After(t) {
				row.State, row.Routable, row.Since = running, true, readyAt.UnixNano()
			}
		}
		next.Actual = append(next.Actual, row)
	}
	return &next
}

// describePass says what a pass at elapsed did and where the LRP stands
// after it.
func (r *dryRun) describePass(before, after *Snapshot, computed *Plan, elapsed time.Duration) *models.RolloutPlanPass {
	pass := &models.RolloutPlanPass{AtMs: elapsed.Milliseconds()}
	guid := r.in.ProcessGuid
	zones := make(map[string]string, len(before.Cells))
	for _, c := range before.Cells {
		zones[c.CellID] = c.Zone
	}
	w, why := &computed.Writes, &computed.Reasons
	note := func(verb string, key models.ActualLRPKey, reason string) {
		if key.ProcessGuid == guid {
			pass.Reasons = append(pass.Reasons, fmt.Sprintf("%s %d: %s", verb, key.Index, reason))
		}
	}
	for i, v := range w.Delete {
		note("delete", v.Key, why.Delete[i])
	}
	for i, v := range w.Promote {
		note("promote", v.Key, why.Promote[i])
	}
	for i, v := range w.MarkSuspect {
		note("suspect", v.Key, why.MarkSuspect[i])
	}
	for i, rt := range w.Retire {
		note("retire", rt.Row.Key, why.Retire[i])
		if rt.Stop && rt.Row.Key.ProcessGuid == guid {
			pass.Stops = append(pass.Stops, rt.Row.Key.Index)
		}
	}
	for i, v := range w.RequestStop {
		note("stop", v.Key, why.RequestStop[i])
		if v.Key.ProcessGuid == guid {
			pass.Stops = append(pass.Stops, v.Key.Index)
		}
	}
	for i, c := range w.Create {
		key := models.ActualLRPKey{ProcessGuid: c.ProcessGuid, Index: c.Index, Presence: ordinary}
		note("create", key, why.Create[i])
		if c.ProcessGuid == guid && c.CellID != "" {
			pass.Starts = append(pass.Starts, &models.PlannedStart{Index: c.Index, CellId: c.CellID, Zone: zones[c.CellID], DefinitionId: c.DefinitionID})
		}
	}
	for i, v := range w.Restart {
		note("restart", v.Key, why.Restart[i])
	}
	for i, rd := range w.Redefine {
		note("redefine", rd.Row.Key, why.Redefine[i])
	}
	for i, v := range w.Unassign {
		note("unassign", v.Key, why.Unassign[i])
	}
	for i, p := range w.Place {
		note("place", p.Row.Key, why.Place[i])
		if p.Row.Key.ProcessGuid == guid {
			definition := ""
			for _, row := range after.Actual {
				if row.Key() == p.Row.Key {
					definition = row.DefinitionID
				}
			}
			pass.Starts = append(pass.Starts, &models.PlannedStart{Index: p.Row.Key.Index, CellId: p.CellID, Zone: zones[p.CellID], DefinitionId: definition})
		}
	}
	for i, f := range w.PlacementFailed {
		note("unplaced", f.Row.Key, why.PlacementFailed[i])
	}
	slices.Sort(pass.Stops)
	slices.SortFunc(pass.Starts, func(a, b *models.PlannedStart) int { return int(a.Index - b.Index) })
	r.count(after, elapsed, pass)
	return pass
}

// count fills in where the LRP stands after a pass: available indices
// (a RUNNING, routable instance not told to stop), surged instances (the
// placed ORDINARY instances and the RETIRING ones not told to stop,
// beyond the count: a successor that fits no cell surges nothing) and
// updated indices (on the new definition, RUNNING and routable for
// min_ready).
func (r *dryRun) count(after *Snapshot, elapsed time.Duration, pass *models.RolloutPlanPass) {
	d := after.DesiredOf(r.in.ProcessGuid)
	now := r.in.Now.Add(elapsed).UnixNano()
	available := map[int32]bool{}
	placed := int32(0)
	for _, row := range after.Actual {
		if row.ProcessGuid != d.ProcessGuid || row.Index >= d.Instances {
			continue
		}
		serving := row.State == running && row.Routable && !row.StopRequested
		switch row.Presence {
		case ordinary:
			if serving && row.DefinitionID == r.to && now-row.Since >= int64(r.minReady) {
				pass.Updated++
			}
			if row.CellID != "" {
				placed++
			}
		case retiring:
			if !row.StopRequested {
				placed++
			}
		default:
			continue
		}
		if serving {
			available[row.Index] = true
		}
	}
	pass.Available = int32(len(available))
	pass.Surged = max(placed-d.Instances, 0)
}
