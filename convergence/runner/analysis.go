package runner

import (
	"context"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/analysis"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// Judging rollouts. The converging board judges every rollout whose
// analysis is due (models.RolloutJudgement.AnalysisDue), after each pass
// that read its record, and stores the verdict; the pass it then triggers
// acts on it (the planner's verdictAction). A scenario, interval 10 s:
//
//  1. 12:00:00 an update starts a rollout of hello to v2 with analysis:
//     its first pass finds it due (no verdict yet) and judges it in the
//     background: the status read, the checks run (each within its
//     timeout), the verdict PASS stored at 12:00:01.
//  2. The planner wakes the LRP at 12:00:11 (the next one due): a pass,
//     a verdict FAIL stored, a pass triggered.
//  3. That pass acts under on_failure: HELD, FAILED or REVERTED. None of
//     them is judged any more; a resume of a HELD rollout judges again.
//
// One verdict per LRP is in flight at a time; a verdict for a definition
// that is no longer the rollout's is refused by the store.

// judging says whether a verdict of the LRP is being made.
func (r *Runner) startJudging(guid string) bool {
	r.judgingMu.Lock()
	defer r.judgingMu.Unlock()
	if r.judging[guid] {
		return false
	}
	r.judging[guid] = true
	return true
}

func (r *Runner) doneJudging(guid string) {
	r.judgingMu.Lock()
	defer r.judgingMu.Unlock()
	delete(r.judging, guid)
}

// judgeDue starts judging every rollout in snapshot whose analysis is due.
func (r *Runner) judgeDue(ctx context.Context, snapshot *convergence.Snapshot) {
	if r.cfg.Analyst == nil {
		return
	}
	now := r.cfg.Now().UnixNano()
	for i := range snapshot.Rollouts {
		rec := &snapshot.Rollouts[i]
		// A queued rollout runs nothing of its definition yet: nothing
		// to judge until the governor admits it.
		if rec.Queued() || !rec.Judgement.AnalysisDue(rec.State, now) || !r.startJudging(rec.ProcessGuid) {
			continue
		}
		go r.judge(ctx, rec.ProcessGuid, rec.DefinitionID, rec.Judgement)
	}
}

// judge makes and stores one verdict of the rollout of guid to
// definitionID, then asks for a pass of the LRP.
func (r *Runner) judge(ctx context.Context, guid, definitionID string, j *models.RolloutJudgement) {
	defer r.doneJudging(guid)
	logger := r.logger.Session("judge", lager.Data{"process_guid": guid, "definition_id": definitionID})
	status, err := r.store.RolloutStatus(ctx, guid)
	if err != nil {
		if ctx.Err() == nil {
			logger.Error("read-status-failed", err)
		}
		return
	}
	if !models.TakesVerdictOf(status.GetState(), status.GetActiveDefinitionId(), status.GetActiveDefinitionId(), definitionID, status.GetJudgement()) {
		return
	}
	started := time.Now()
	v := r.cfg.Analyst.Judge(ctx, j.GetAnalysis(), subjectOf(status, j))
	if err := r.store.RecordVerdict(ctx, guid, definitionID, v); err != nil {
		if ctx.Err() == nil {
			logger.Error("record-verdict-failed", err)
		}
		return
	}
	r.metrics.verdicts.WithLabelValues(v.GetOutcome().String()).Inc()
	logger.Info("verdict", lager.Data{"verdict": models.VerdictLine(v), "took_ms": milliseconds(time.Since(started))})
	r.Trigger(guid)
}

// subjectOf is what a verdict of the rollout in status judges: its active
// definition against the healthy one, each with its instances.
func subjectOf(status *models.RolloutStatus, j *models.RolloutJudgement) analysis.Subject {
	s := analysis.Subject{
		ProcessGuid:  status.GetProcessGuid(),
		DefinitionID: status.GetActiveDefinitionId(),
		During:       models.AnalysisDuringRolling,
		Status:       status,
		Judgement:    j,
	}
	if fresh := status.GetJudgement(); fresh != nil {
		s.Judgement = fresh
	}
	if j.GetBakeStartedAt() > 0 {
		s.During = models.AnalysisDuringBaking
	}
	if healthy := status.GetHealthyDefinitionId(); healthy != s.DefinitionID {
		s.BaselineDefinitionID = healthy
	}
	for _, d := range status.GetDefinitions() {
		switch d.GetDefinitionId() {
		case s.DefinitionID:
			s.Instances = int(d.GetInstances())
		case s.BaselineDefinitionID:
			s.BaselineInstances = int(d.GetInstances())
		}
	}
	return s
}
