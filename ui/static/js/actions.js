// Which of the LRP page's actions the board would accept now, and why not.
// The board decides; these mirror its rules so that a button the board
// would refuse is disabled, its tooltip saying why. Each function names the
// Go rule it mirrors; when that rule changes, this file changes with it.
// They read only what the page has: the rollout status (GET rollout
// status, or a rollout_changed event, which carries the LRP's active and
// healthy definitions too) and the kept definitions (definitions/list). An answer is {ok, why}: why is ''
// when ok.
//
// Worked example: hello, v1 healthy, v2 staged to 50% and HOLDING there.
//  1. Pause: ok (a staged phase under way, not paused).
//  2. Resume: not ok, "the staged phase is not paused".
//  3. Promote and Edit surge: ok.
//  4. Abort: ok (healthy v1 is not the active v2).
//  5. Rollback: ok (v1 became healthy and did not fail validation).
// After it completes (COMPLETE, v2 healthy and active), Pause, Resume,
// Promote, Edit and Abort are not ok; Rollback still is (to v1).

const ok = { ok: true, why: '' };
const no = (why) => ({ ok: false, why });

// advancing mirrors models.RolloutAdvancing: PROGRESSING or HOLDING.
function advancing(state) {
  return state === 'PROGRESSING' || state === 'HOLDING';
}

// stageRefusal mirrors models.stageRefusal (models.StageUnderWay): a
// command may change a staged phase only of an advancing rollout. The
// status carries the stage of the record for the active definition (the
// board writes both in one transaction), so the definition check of the
// Go rule holds here by construction.
function stageRefusal(status) {
  const state = status.state || 'NONE';
  if (state === 'NONE') return 'the LRP has no rollout';
  if (!status.stage) return 'the rollout is not staged (an update with staged starts one)';
  if (!advancing(state)) return `the staged rollout is ${state}, not PROGRESSING or HOLDING`;
  return '';
}

// canPause mirrors models.DecideStage for StagePause.
export function canPause(status) {
  const refusal = stageRefusal(status);
  if (refusal) return no(refusal);
  if (status.stage.paused) return no('the staged phase is paused already');
  return ok;
}

// canResume mirrors models.DecideStage for StageResume: a rollout HELD by
// its failure policy resumes; otherwise a paused staged phase does.
export function canResume(status) {
  if (status.state === 'HELD') return ok;
  const refusal = stageRefusal(status);
  if (refusal) return no(refusal + '; nor is it HELD');
  if (!status.stage.paused) return no('the staged phase is not paused');
  return ok;
}

// canPromote mirrors models.DecideStage for StagePromote (a to_percent
// below the share that stands is refused with the board's own message).
export function canPromote(status) {
  const refusal = stageRefusal(status);
  return refusal ? no(refusal) : ok;
}

// canEdit mirrors models.DecideRolloutEdit's rule 1
// (models.RolloutUnderWay): PROGRESSING, HOLDING, or REVERTED while its
// instances still go back.
export function canEdit(status) {
  const state = status.state || 'NONE';
  if (advancing(state) || (state === 'REVERTED' && !Number(status.finished_at || 0))) return ok;
  if (state === 'NONE') return no('the LRP has no rollout to edit');
  if (state === 'REVERTED') return no('the rollout is REVERTED and back on its healthy definition');
  return no(`the rollout is ${state}; only a rollout PROGRESSING, HOLDING or REVERTED and still moving can be edited`);
}

// canAbort mirrors models.Abortable (models.AbortTarget): there is a
// healthy definition other than the active one to go back to.
export function canAbort(status) {
  const healthy = status.healthy_definition_id || '';
  const active = status.active_definition_id || '';
  if (!healthy) return no('no rollout of the LRP has completed yet: roll back to a definition instead');
  if (healthy === active) return no('the LRP runs its healthy definition already: there is no rollout to abort');
  return ok;
}

// canRollBack mirrors models.RollbackTarget without a named definition: a
// kept definition other than the active one that became healthy and did
// not fail validation. (A named one, "Roll back to…" in the definitions
// table, may be any kept definition but the active one.)
export function canRollBack(definitions) {
  const ran = (definitions || []).some((d) => !d.active && d.became_healthy && !d.failed_validation);
  return ran ? ok : no('no other kept definition became healthy without failing validation: nothing known to run to roll back to');
}
