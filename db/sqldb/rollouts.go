package sqldb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.RolloutDB = (*SQLDB)(nil)

// Rollout records (table rollouts, migration 0005): one per LRP that ever
// changed its active definition. Every write of a record moves its
// modification_index on by one, and every change of an LRP's active
// definition writes its record as PROGRESSING in the same transaction:
// an update with a new definition (update.go), Rollback and AbortRollout
// here. RemoveDesiredLRP marks the record unsettled so that convergence
// cleans up the gone LRP's definitions; convergence writes the rest
// (ApplyConvergence's Rollouts group, convergence_rollouts.go).
//
// Each of those writes emits rollout_changed with the status as
// rolloutStatus builds it, which is also what RolloutStatus answers.

// rolloutColumnList is the record's columns (table alias o) in the order
// scanRollout reads them. stage (migration 0008) is NULL unless the
// rollout is staged; fast (migration 0019) marks a fast rollout;
// admitted_at, queue_position and queue_reason (migration 0022) are the
// rollout governor's; blocked_by (migration 0025) is NULL unless the
// planner found the rollout blocked.
const rolloutColumnList = `o.process_guid, o.state, o.reason, o.definition_id, o.failed_definition_id,
 o.started_at, o.progress_at, o.finished_at, o.updated_instances, o.in_flight, o.settled, o.modification_index,
 o.operation_id, o.stage, o.fast, o.judgement, o.admitted_at, o.queue_position, o.queue_reason, o.freeze_exemption, o.blocked_by`

var rolloutColumns = []string{
	"process_guid", "state", "reason", "definition_id", "failed_definition_id",
	"started_at", "progress_at", "finished_at", "updated_instances", "in_flight", "settled", "modification_index",
	"operation_id", "stage", "fast", "judgement", "admitted_at", "queue_position", "queue_reason", "freeze_exemption", "blocked_by",
}

// rolloutRecord is one row of rollouts.
type rolloutRecord struct {
	convergence.RolloutRow
	// Settled: the snapshot no longer reads the record.
	Settled bool
}

func scanRollout(row rowScanner) (*rolloutRecord, error) {
	rec := &rolloutRecord{}
	var state string
	var updated, inFlight, queuePosition int64
	var stage, judgement, blocked []byte
	err := row.Scan(&rec.ProcessGuid, &state, &rec.Reason, &rec.DefinitionID, &rec.FailedDefinitionID,
		&rec.StartedAt, &rec.ProgressAt, &rec.FinishedAt, &updated, &inFlight, &rec.Settled, &rec.ModificationIndex,
		&rec.OperationID, &stage, &rec.Fast, &judgement, &rec.AdmittedAt, &queuePosition, &rec.QueueReason, &rec.FreezeExemption, &blocked)
	if err != nil {
		return nil, err
	}
	value, known := models.RolloutStatus_State_value[state]
	if !known {
		return nil, errInvalidRecord("rollout of desired_lrp %q: unknown state %q", rec.ProcessGuid, state)
	}
	rec.State = models.RolloutStatus_State(value)
	rec.UpdatedInstances, rec.InFlight, rec.QueuePosition = int32(updated), int32(inFlight), int32(queuePosition)
	if rec.Stage, err = decodeStage(stage); err != nil {
		return nil, errInvalidRecord("rollout of desired_lrp %q: stage: %v", rec.ProcessGuid, err)
	}
	if judgement != nil {
		rec.Judgement = &models.RolloutJudgement{}
		if err := proto.Unmarshal(judgement, rec.Judgement); err != nil {
			return nil, errInvalidRecord("rollout of desired_lrp %q: judgement: %v", rec.ProcessGuid, err)
		}
	}
	if rec.BlockedBy, err = decodeBlockedBy(blocked); err != nil {
		return nil, errInvalidRecord("rollout of desired_lrp %q: blocked_by: %v", rec.ProcessGuid, err)
	}
	return rec, nil
}

// readRollout reads the LRP's record, nil when it has none; lock is "" or
// the dialect's FOR UPDATE.
func (s *SQLDB) readRollout(ctx context.Context, q queryer, processGuid, lock string) (*rolloutRecord, error) {
	rec, err := scanRollout(s.queryRow(ctx, q, "SELECT "+rolloutColumnList+" FROM rollouts o WHERE o.process_guid = ?"+lock, processGuid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return rec, err
}

// storeRollout writes rec as the record's next version over the one with
// modification index expect, 0 meaning there is none: it inserts, or
// updates compare-and-set on expect, and sets rec.ModificationIndex to
// expect + 1. A record that appeared or moved on since it was read is
// errLostRace.
func (s *SQLDB) storeRollout(ctx context.Context, tx *sql.Tx, rec *rolloutRecord, expect int64) error {
	stage, err := encodeStage(rec.Stage)
	if err != nil {
		return errInvalid("stage", err.Error())
	}
	judgement, err := encodeMessage(rec.Judgement, rec.Judgement == nil)
	if err != nil {
		return errInvalid("judgement", err.Error())
	}
	blocked, err := encodeBlockedBy(rec.BlockedBy)
	if err != nil {
		return errInvalid("blocked_by", err.Error())
	}
	rec.ModificationIndex = expect + 1
	values := []any{rec.State.String(), rec.Reason, rec.DefinitionID, rec.FailedDefinitionID,
		rec.StartedAt, rec.ProgressAt, rec.FinishedAt, rec.UpdatedInstances, rec.InFlight, rec.Settled, rec.ModificationIndex,
		rec.OperationID, stage, rec.Fast, judgement, rec.AdmittedAt, rec.QueuePosition, rec.QueueReason, rec.FreezeExemption, blocked}
	if expect == 0 {
		_, err := s.exec(ctx, tx, insertStatement("rollouts", rolloutColumns), append([]any{rec.ProcessGuid}, values...)...)
		if isUniqueViolation(err) {
			return errLostRace
		}
		return err
	}
	return s.execOne(ctx, tx, "UPDATE rollouts SET "+strings.Join(rolloutColumns[1:], " = ?, ")+
		" = ? WHERE process_guid = ? AND modification_index = ?", append(values, rec.ProcessGuid, expect)...)
}

// startRollout stores the LRP's record as a rollout to definition to that
// starts now, over whatever record there was: PROGRESSING, nothing
// counted, not settled, started by operation operationID, in the staged
// phase stage (nil: not staged; see models.NewRolloutStage), fast or not
// (convergence.RolloutRow.Fast), judged by judgement (nil: not judged;
// models.NewRolloutJudgement), held by freezes or not as exemption says
// (convergence.RolloutRow.FreezeExemption). A rollout that supersedes one
// holding a slot of the rollout governor keeps its admission
// (convergence.RolloutRow.SupersededAdmission): the LRP is half-way already.
func (s *SQLDB) startRollout(ctx context.Context, tx *sql.Tx, processGuid, to, reason, operationID string, stage *models.RolloutStage, fast bool, exemption string, judgement *models.RolloutJudgement, now int64) (*rolloutRecord, error) {
	current, err := s.readRollout(ctx, tx, processGuid, s.driver.lockForUpdate())
	if err != nil {
		return nil, err
	}
	var expect int64
	if current != nil {
		expect = current.ModificationIndex
	}
	rec := &rolloutRecord{RolloutRow: convergence.StartedRollout(processGuid, to, reason, operationID, stage, now)}
	if current != nil {
		rec.AdmittedAt = current.SupersededAdmission()
	}
	rec.Fast = fast
	rec.FreezeExemption = exemption
	rec.Judgement = judgement
	return rec, s.storeRollout(ctx, tx, rec, expect)
}

// markRolloutUnsettled makes a removed LRP's record unsettled, inserting
// one (state NONE) when it has none, so that convergence cleans up the
// LRP's definitions and then deletes the record.
func (s *SQLDB) markRolloutUnsettled(ctx context.Context, tx *sql.Tx, processGuid string) (*rolloutRecord, error) {
	rec, err := s.readRollout(ctx, tx, processGuid, s.driver.lockForUpdate())
	if err != nil {
		return nil, err
	}
	var expect int64
	if rec == nil {
		rec = &rolloutRecord{RolloutRow: convergence.RolloutRow{ProcessGuid: processGuid, State: models.RolloutStatus_NONE}}
	} else {
		expect = rec.ModificationIndex
	}
	rec.Settled = false
	return rec, s.storeRollout(ctx, tx, rec, expect)
}

// rolloutStatus reads the live per-definition counts of the LRP and builds
// its status at now (Unix nanoseconds, for a staged phase's share);
// desired and rec are nil when there is none.
func (s *SQLDB) rolloutStatus(ctx context.Context, q queryer, processGuid string, desired *models.DesiredLRP, rec *rolloutRecord, now int64) (*models.RolloutStatus, error) {
	counts, activeOrdinary, err := s.definitionInstances(ctx, q, processGuid, desired.GetActiveDefinitionId())
	if err != nil {
		return nil, err
	}
	return buildRolloutStatus(processGuid, desired, rec, counts, activeOrdinary, now), nil
}

// buildRolloutStatus is the one place a models.RolloutStatus is made: the
// RolloutStatus call and every rollout_changed event use it. desired (the
// LRP, nil when gone) gives the active and healthy definitions, the
// instances and the strategy; rec (nil when there is none: state NONE)
// where the rollout stands as convergence last wrote it; counts the
// instances per definition as they are now, and activeOrdinary the
// ORDINARY ones of them on the active definition.
//
// deadline_at is progress_at (or admitted_at when later: DeadlineFrom)
// plus the progress deadline of the strategy as the planner resolves it
// (models.StoredRolloutStrategy) while the deadline runs
// (models.RolloutDeadlineRuns, and not queued by the governor), else 0.
//
// A staged record's stage comes with its computed fields at now (see
// stageStatus).
func buildRolloutStatus(processGuid string, desired *models.DesiredLRP, rec *rolloutRecord, counts []*models.DefinitionInstances, activeOrdinary int32, now int64) *models.RolloutStatus {
	status := &models.RolloutStatus{ProcessGuid: processGuid, Definitions: counts}
	if desired != nil {
		status.ActiveDefinitionId = desired.ActiveDefinitionId
		status.HealthyDefinitionId = desired.HealthyDefinitionId
		status.Instances = desired.Instances
	}
	if rec == nil {
		return status
	}
	status.State = rec.State
	status.Reason = rec.StatusReason()
	status.QueuePosition = rec.QueuePosition
	status.AdmittedAt = rec.AdmittedAt
	status.FailedDefinitionId = rec.FailedDefinitionID
	status.UpdatedInstances = rec.UpdatedInstances
	status.InFlight = rec.InFlight
	status.StartedAt, status.ProgressAt, status.FinishedAt = rec.StartedAt, rec.ProgressAt, rec.FinishedAt
	status.OperationId = rec.OperationID
	status.Fast = rec.Fast
	status.FreezeExemption = rec.FreezeExemption
	status.Judgement = rec.Judgement
	status.BlockedBy = rec.BlockedBy
	if desired != nil && !rec.Queued() && models.RolloutDeadlineRuns(rec.State, rec.FinishedAt, rec.Stage) {
		deadline := models.StoredRolloutStrategy(desired.Instances, desired.UpdateStrategy).ProgressDeadline
		status.DeadlineAt = rec.DeadlineFrom() + int64(deadline)
	}
	if rec.Stage != nil {
		status.Stage = stageStatus(rec.Stage, status.Instances, activeOrdinary, now)
	}
	return status
}

// definitionInstances counts the LRP's rows per definition — every
// presence and state, and of those the RUNNING routable ones — in one
// GROUP BY, newest definition first (by the stored definitions' created_at;
// one no longer stored counts as oldest). The active definition is listed
// even while no row runs it. The same GROUP BY counts the ORDINARY rows
// too, of which it returns the active definition's (a staged phase's
// active_instances: a RETIRING or evacuating copy is not one more
// instance on the definition).
func (s *SQLDB) definitionInstances(ctx context.Context, q queryer, processGuid, activeID string) ([]*models.DefinitionInstances, int32, error) {
	var counts []*models.DefinitionInstances
	var activeOrdinary int32
	err := s.eachRow(ctx, q, `SELECT definition_id, COUNT(*), SUM(CASE WHEN state = ? AND routable THEN 1 ELSE 0 END),
 SUM(CASE WHEN presence = ? THEN 1 ELSE 0 END)
 FROM actual_lrps WHERE process_guid = ? GROUP BY definition_id`,
		[]any{models.ActualLRP_RUNNING.String(), presenceOrdinary, processGuid}, func(rows *sql.Rows) error {
			var c models.DefinitionInstances
			var instances, running, ordinary int64
			if err := rows.Scan(&c.DefinitionId, &instances, &running, &ordinary); err != nil {
				return err
			}
			c.Instances, c.Running = int32(instances), int32(running)
			if c.DefinitionId == activeID {
				activeOrdinary = int32(ordinary)
			}
			counts = append(counts, &c)
			return nil
		})
	if err != nil {
		return nil, 0, err
	}
	if activeID != "" && !slices.ContainsFunc(counts, func(c *models.DefinitionInstances) bool { return c.DefinitionId == activeID }) {
		counts = append(counts, &models.DefinitionInstances{DefinitionId: activeID})
	}
	if len(counts) < 2 {
		return counts, activeOrdinary, nil
	}
	created, err := s.definitionTimes(ctx, q, processGuid)
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(counts, func(a, b *models.DefinitionInstances) int {
		return cmp.Or(cmp.Compare(created[b.DefinitionId], created[a.DefinitionId]), strings.Compare(b.DefinitionId, a.DefinitionId))
	})
	return counts, activeOrdinary, nil
}

// definitionTimes maps the LRP's stored definitions to their created_at.
func (s *SQLDB) definitionTimes(ctx context.Context, q queryer, processGuid string) (map[string]int64, error) {
	created := map[string]int64{}
	err := s.eachRow(ctx, q, "SELECT definition_id, created_at FROM run_infos WHERE process_guid = ?", []any{processGuid},
		func(rows *sql.Rows) error {
			var id string
			var at int64
			if err := rows.Scan(&id, &at); err != nil {
				return err
			}
			created[id] = at
			return nil
		})
	return created, err
}

// RolloutStatus reports where the LRP's rollout stands, read in one
// consistent snapshot of its desired row, record and instances.
func (s *SQLDB) RolloutStatus(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	if err := checkRolloutGuid(processGuid); err != nil {
		return nil, err
	}
	var status *models.RolloutStatus
	err := s.readConsistently(ctx, func(tx *sql.Tx) error {
		desired, err := s.readDesiredLRPOnly(ctx, tx, processGuid, "")
		if err != nil {
			return err
		}
		rec, err := s.readRollout(ctx, tx, processGuid, "")
		if err != nil {
			return err
		}
		status, err = s.rolloutStatus(ctx, tx, processGuid, desired, rec, s.now().UnixNano())
		return err
	})
	if err != nil {
		return nil, asModelError("read rollout status", err)
	}
	return status, nil
}

// Rollback re-activates a kept definition: definitionID, or by default one
// known to run, as models.RollbackTarget chooses from the LRP's kept
// definitions read under its row lock. It moves the LRP's modification
// tag on and starts a rollout to the definition under a ROLLBACK
// operation, which supersedes the LRP's operations that have not ended
// (see rollBackTo). A named definition not known to run is rolled back to
// with a warning: the operation's first history line carries it, and so
// does the context's db.OperationNote (Warning), for the answer. With fast
// the rollout is a fast one (convergence.RolloutRow.Fast), and the
// operation's parameters say so.
func (s *SQLDB) Rollback(ctx context.Context, processGuid, definitionID string, fast bool) (*models.RolloutStatus, error) {
	if err := checkRolloutGuid(processGuid); err != nil {
		return nil, err
	}
	if err := checkWidth("definition_id", definitionID, maxDefinitionID); err != nil {
		return nil, err
	}
	return s.runRolloutCommand(ctx, processGuid, rolloutCommand{name: "roll back", kind: models.Operation_ROLLBACK,
		request: &models.RollbackRequest{ProcessGuid: processGuid, DefinitionId: definitionID, Fast: fast},
		fast:    fast,
		target: func(before *models.DesiredLRP, kept []*models.DefinitionSummary) (string, string, error) {
			target, warning, err := models.RollbackTarget(processGuid, kept, definitionID)
			if err != nil {
				return "", "", err
			}
			line := fmt.Sprintf("rolling back from %s to %s", before.ActiveDefinitionId, target)
			if warning != "" {
				line += " (warning: " + warning + ")"
				if note := db.OperationNoteFrom(ctx); note != nil {
					note.Warning = warning
				}
			}
			return target, line, nil
		}})
}

// AbortRollout re-activates the healthy definition, as Rollback does, under
// an ABORT operation (models.AbortTarget), fast as Rollback's.
func (s *SQLDB) AbortRollout(ctx context.Context, processGuid string, fast bool) (*models.RolloutStatus, error) {
	if err := checkRolloutGuid(processGuid); err != nil {
		return nil, err
	}
	return s.runRolloutCommand(ctx, processGuid, rolloutCommand{name: "abort rollout", kind: models.Operation_ABORT,
		request: &models.AbortRolloutRequest{ProcessGuid: processGuid, Fast: fast},
		fast:    fast,
		target: func(before *models.DesiredLRP, kept []*models.DefinitionSummary) (string, string, error) {
			healthy, err := models.AbortTarget(before, kept)
			if err != nil {
				return "", "", err
			}
			return healthy, fmt.Sprintf("aborting the rollout to %s: rolling back to %s", before.ActiveDefinitionId, healthy), nil
		}})
}

// rolloutCommand is an operator's command on an LRP's rollout, for
// runRolloutCommand: an operation kind made by request, and either a stage
// command (promote, pause, resume) or a target (rollback, abort).
type rolloutCommand struct {
	// name names the call in its errors.
	name    string
	kind    models.Operation_Kind
	request proto.Message
	// stage is decided by models.DecideStage on the LRP's record.
	stage *models.StageCommand
	// target decides, from the LRP as read (locked) and its kept
	// definitions, the definition to go back to and the operation's first
	// history line, or refuses.
	target func(before *models.DesiredLRP, kept []*models.DefinitionSummary) (target, line string, err error)
	// fast: the target's rollout is a fast one.
	fast bool
}

// runRolloutCommand runs cmd on the LRP processGuid in one transaction:
// it locks the LRP's desired row (as every writer of the LRP does first),
// reads what the decision needs (the rollout record, locked, for a stage
// command; the kept definitions for a target), decides, writes the
// difference with its operation (changeStage, rollBackTo), and logs their
// events. A refusal writes nothing. It answers the rollout's status after
// the command.
func (s *SQLDB) runRolloutCommand(ctx context.Context, processGuid string, cmd rolloutCommand) (*models.RolloutStatus, error) {
	var status *models.RolloutStatus
	err := s.transactOperation(ctx, cmd.name, processGuid, func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		before, err := s.lockDesiredLRP(ctx, tx, processGuid)
		if err != nil {
			return nil, nil, err
		}
		var op *models.Operation
		var events []models.Event
		if cmd.stage != nil {
			rec, err := s.readRollout(ctx, tx, processGuid, s.driver.lockForUpdate())
			if err != nil {
				return nil, nil, err
			}
			now := s.now().UnixNano()
			after, line, err := models.DecideStage(processGuid, before.ActiveDefinitionId, stageRecord(rec), *cmd.stage, now)
			if err != nil {
				return nil, nil, err
			}
			op, status, events, err = s.changeStage(ctx, tx, before, rec, after, cmd.kind, cmd.request, line, now)
			return op, events, err
		}
		kept, err := s.keptDefinitions(ctx, tx, processGuid)
		if err != nil {
			return nil, nil, err
		}
		target, line, err := cmd.target(before, kept)
		if err != nil {
			return nil, nil, err
		}
		if cmd.fast {
			line += " (fast)"
		}
		op, status, events, err = s.rollBackTo(ctx, tx, before, target, cmd.kind, cmd.request, line, nil, cmd.fast, s.now().UnixNano())
		return op, events, err
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}

// rollBackTo makes target, a kept definition (models.RollbackTarget and
// models.AbortTarget choose only those), the active definition of
// the LRP before (read locked) under a new operation of kind (ROLLBACK or
// ABORT) made by request, whose history starts with line: it moves the
// LRP's modification tag on, starts the rollout to target ("rolling back
// from <active> to <target>", a fast one with fast) carrying the
// operation's id, and supersedes the LRP's operations that have not ended
// (reasonFor as in startDefinitionChange). It returns the operation, the
// status and the events: desired_lrp_changed, rollout_changed, then
// operation_changed for the new operation and for each one it ended.
func (s *SQLDB) rollBackTo(ctx context.Context, tx *sql.Tx, before *models.DesiredLRP, target string, kind models.Operation_Kind,
	request proto.Message, line string, reasonFor func(recorded *models.Operation) func(*models.Operation) string, fast bool, now int64,
) (*models.Operation, *models.RolloutStatus, []models.Event, error) {
	unfinished, err := s.unfinishedOperations(ctx, tx, before.ProcessGuid)
	if err != nil {
		return nil, nil, nil, err
	}
	rec, err := s.newOperation(ctx, tx, before.ProcessGuid, kind, request, now)
	if err != nil {
		return nil, nil, nil, err
	}
	var reasons func(*models.Operation) string
	if reasonFor != nil {
		reasons = reasonFor(rec.op)
	}
	ended, err := s.startDefinitionChange(ctx, tx, rec, target, unfinished, reasons, now)
	if err != nil {
		return nil, nil, nil, err
	}
	addHistory(rec.op, now, line)
	if err := s.insertOperation(ctx, tx, rec); err != nil {
		return nil, nil, nil, err
	}
	after := copyDesiredLRP(before)
	after.ActiveDefinitionId = target
	after.ModificationTag.Index++
	if err := s.writeDefinitionIDs(ctx, tx, before, after, now); err != nil {
		return nil, nil, nil, err
	}
	reason := fmt.Sprintf("rolling back from %s to %s", before.ActiveDefinitionId, target)
	// Going back is never staged: the record starts without a stage. It is
	// a revert, which no freeze holds (models.FreezeHolds).
	rollout, err := s.startRollout(ctx, tx, before.ProcessGuid, target, reason, rec.op.Id, nil, fast, models.FreezeExemptRevert, nil, now)
	if err != nil {
		return nil, nil, nil, err
	}
	status, err := s.rolloutStatus(ctx, tx, before.ProcessGuid, after, rollout, now)
	if err != nil {
		return nil, nil, nil, err
	}
	events := []models.Event{models.DesiredLRPChanged(before, after), models.RolloutChanged(status)}
	events = append(events, operationEvents(append([]*models.Operation{rec.op}, ended...)...)...)
	return rec.op, status, events, nil
}

// writeDefinitionIDs stores after's active and healthy definitions and tag
// index over before, compare-and-set on before's tag. A definition that
// becomes active again brings back the routes it serves as the LRP's
// (after's too): the LRP's routes are always its active definition's, so
// after a rollback from 9090 to a definition on 8080 they send to 8080
// again. (A definition stored before definitions kept their routes
// leaves the LRP's routes as they are.) A definition that becomes the
// healthy one is marked as having become healthy, for good: a plain
// rollback may go back to it (models.RollbackTarget).
func (s *SQLDB) writeDefinitionIDs(ctx context.Context, tx *sql.Tx, before, after *models.DesiredLRP, now int64) error {
	if after.HealthyDefinitionId != "" && after.HealthyDefinitionId != before.HealthyDefinitionId {
		if err := s.markBecameHealthy(ctx, tx, after.ProcessGuid, after.HealthyDefinitionId); err != nil {
			return err
		}
	}
	set := "active_definition_id = ?, healthy_definition_id = ?, modification_tag_index = ?, updated_at = ?"
	args := []any{after.ActiveDefinitionId, after.HealthyDefinitionId, int64(after.ModificationTag.Index), now}
	if after.ActiveDefinitionId != before.ActiveDefinitionId {
		routes, kept, err := s.definitionRoutes(ctx, tx, after.ProcessGuid, after.ActiveDefinitionId)
		if err != nil {
			return err
		}
		if kept && !proto.Equal(routes, before.Routes) {
			text, err := encodeRoutes(routes)
			if err != nil {
				return err
			}
			set += ", routes = ?"
			args = append(args, text)
			after.Routes = routes
		}
	}
	return s.updateDesiredRow(ctx, tx, before, set, args...)
}

// updateDesiredRow sets the columns of set (assignments with ? bound to
// args) on before's row, compare-and-set on its modification tag as read
// (locked): a row that matches nothing is errLostRace.
func (s *SQLDB) updateDesiredRow(ctx context.Context, tx *sql.Tx, before *models.DesiredLRP, set string, args ...any) error {
	args = append(args, before.ProcessGuid, before.ModificationTag.Epoch, int64(before.ModificationTag.Index))
	return s.execOne(ctx, tx, "UPDATE desired_lrps SET "+set+
		" WHERE process_guid = ? AND modification_tag_epoch = ? AND modification_tag_index = ?", args...)
}

// copyDesiredLRP copies the LRP with a tag of its own, the rest shared:
// writes change only definition ids, the tag, instances and the
// autoscaler's state, and replace a message rather than change it.
func copyDesiredLRP(lrp *models.DesiredLRP) *models.DesiredLRP {
	c := &models.DesiredLRP{
		ProcessGuid:         lrp.ProcessGuid,
		Domain:              lrp.Domain,
		Instances:           lrp.Instances,
		PlacementTags:       lrp.PlacementTags,
		Routes:              lrp.Routes,
		Annotation:          lrp.Annotation,
		ActiveDefinitionId:  lrp.ActiveDefinitionId,
		HealthyDefinitionId: lrp.HealthyDefinitionId,
		UpdateStrategy:      lrp.UpdateStrategy,
		DisruptionBudget:    lrp.DisruptionBudget,
		Definition:          lrp.Definition,
		CreatedAt:           lrp.CreatedAt,
		Autoscaling:         lrp.Autoscaling,
		Autoscaler:          lrp.Autoscaler,
	}
	if lrp.ModificationTag != nil {
		c.ModificationTag = &models.ModificationTag{Epoch: lrp.ModificationTag.Epoch, Index: lrp.ModificationTag.Index}
	}
	return c
}

func checkRolloutGuid(processGuid string) error {
	return checkRequired("process_guid", processGuid, maxProcessGuid)
}
