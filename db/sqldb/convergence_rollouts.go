package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// The last two groups of a plan: rollout records (with the LRP's healthy or
// active definition) and the deletion of definitions cleanup no longer
// keeps. Both are few per pass — only LRPs whose rollout moved, only
// definitions past their history — so each write is a handful of
// statements on one LRP, in transactions of up to recordBatchSize writes.

// recordBatchSize bounds the writes of one rollout or definition batch.
const recordBatchSize = 100

// rollouts applies the Rollouts group. Each write locks the LRP's desired
// row, then its record (the order UpdateDesiredLRP, Rollback and
// AbortRollout take them in), and applies only when the LRP's active
// definition is still ExpectActiveDefinitionID ("" for a gone LRP) and the
// record's modification index still ExpectModificationIndex (0: there is
// no record); otherwise it is skipped. A record inserted by someone else
// between the read and the insert makes the batch run again, which skips
// the write.
//
// Events, per write: desired_lrp_changed (before and after) when the
// LRP's active or healthy definition moved — the active one moves its
// modification tag on, the healthy one alone does not, as it changes
// nothing a client asked for — then rollout_changed with the status built
// after the write (a deleted record's: state NONE).
func (a *convergenceApplier) rollouts(ctx context.Context, writes []convergence.RolloutWrite) error {
	return applyInBatches(ctx, a, "rollouts", writes, func(w convergence.RolloutWrite) string { return w.ProcessGuid }, a.rolloutWrite)
}

// applyInBatches applies writes in batches of at most recordBatchSize,
// each in one transaction (applyEach), counting them applied or skipped. A
// batch ends before a second write with the same key, so that it sees the
// first one's result.
func applyInBatches[W any](ctx context.Context, a *convergenceApplier, what string, writes []W, key func(W) string,
	write func(context.Context, *sql.Tx, W) ([]models.Event, error)) error {
	for len(writes) > 0 {
		n := min(len(writes), recordBatchSize)
		seen := make(map[string]struct{}, n)
		for i := range n {
			if _, dup := seen[key(writes[i])]; dup {
				n = i
				break
			}
			seen[key(writes[i])] = struct{}{}
		}
		applied, err := applyEach(ctx, a.s, what, writes[:n], write)
		if err != nil {
			return err
		}
		a.result.Applied += applied
		a.result.Skipped += n - applied
		writes = writes[n:]
	}
	return nil
}

// applyEach applies the writes of batch one by one with write, in one
// transaction, and counts those applied: a write answers its events, or
// nil when it is skipped (the row is no longer what the plan saw).
func applyEach[W any](ctx context.Context, s *SQLDB, what string, batch []W,
	write func(context.Context, *sql.Tx, W) ([]models.Event, error)) (int, error) {
	var applied int
	err := s.transactPublishing(ctx, "apply convergence: "+what, func(tx *sql.Tx) ([]models.Event, error) {
		applied = 0
		var events []models.Event
		for _, w := range batch {
			written, err := write(ctx, tx, w)
			if err != nil {
				return nil, err
			}
			if written != nil {
				applied++
				events = append(events, written...)
			}
		}
		return events, nil
	})
	if err != nil {
		return 0, err
	}
	return applied, nil
}

// rolloutWrite applies one write and returns its events, or nil when it is
// skipped.
func (a *convergenceApplier) rolloutWrite(ctx context.Context, tx *sql.Tx, w convergence.RolloutWrite) ([]models.Event, error) {
	s := a.s
	lock := s.driver.lockForUpdate()
	desired, err := s.scanDesiredLRP(s.queryRow(ctx, tx, selectDesiredLRPOnly+" WHERE d.process_guid = ?"+lock, w.ProcessGuid))
	if errors.Is(err, sql.ErrNoRows) {
		desired, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if desired.GetActiveDefinitionId() != w.ExpectActiveDefinitionID {
		return nil, nil
	}
	current, err := s.readRollout(ctx, tx, w.ProcessGuid, lock)
	if err != nil {
		return nil, err
	}
	if current.modificationIndex() != w.ExpectModificationIndex {
		return nil, nil
	}

	if w.Delete {
		if err := s.execOne(ctx, tx, "DELETE FROM rollouts WHERE process_guid = ? AND modification_index = ?",
			w.ProcessGuid, w.ExpectModificationIndex); err != nil {
			return nil, err
		}
		status, err := s.rolloutStatus(ctx, tx, w.ProcessGuid, nil, nil, a.now)
		if err != nil {
			return nil, err
		}
		return []models.Event{models.RolloutChanged(status)}, nil
	}

	stored, _ := convergence.StoredRollout(w)
	rec := &rolloutRecord{RolloutRow: stored, Settled: w.Settled}
	if err := s.storeRollout(ctx, tx, rec, w.ExpectModificationIndex); err != nil {
		return nil, err
	}
	var events []models.Event
	after := desired
	active, healthy, moved := convergence.RolloutDefinitions(w, desired.GetActiveDefinitionId(), desired.GetHealthyDefinitionId())
	if desired != nil && (active != desired.ActiveDefinitionId || healthy != desired.HealthyDefinitionId) {
		after = copyDesiredLRP(desired)
		after.ActiveDefinitionId, after.HealthyDefinitionId = active, healthy
		if moved {
			after.ModificationTag.Index++
		}
		if err := s.writeDefinitionIDs(ctx, tx, desired, after, a.now); err != nil {
			return nil, err
		}
		events = append(events, models.DesiredLRPChanged(desired, after))
	}
	status, err := s.rolloutStatus(ctx, tx, w.ProcessGuid, after, rec, a.now)
	if err != nil {
		return nil, err
	}
	return append(events, models.RolloutChanged(status)), nil
}

// modificationIndex is the record's, 0 when there is none.
func (r *rolloutRecord) modificationIndex() int64 {
	if r == nil {
		return 0
	}
	return r.ModificationIndex
}

// deleteDefinitions applies the DeleteDefinitions group. The guard is the
// DELETE's own condition, evaluated when it runs: the definition is
// neither the LRP's active nor its healthy definition and no actual LRP
// row of any presence or state references it; otherwise it is skipped.
//
// Writers that start referencing a kept definition take its LRP's desired
// row lock (an update or rollback making it active) or its run_infos row
// lock (a desire reusing it, see putDefinition), so the batch takes both
// before its DELETE: it then either waits for such a writer and its DELETE
// sees the reference, or the writer waits and finds the definition gone.
// SQLite runs one writer at a time and needs no locks.
func (a *convergenceApplier) deleteDefinitions(ctx context.Context, refs []convergence.DefinitionRef) error {
	for len(refs) > 0 {
		n := min(len(refs), recordBatchSize)
		applied, err := a.deleteDefinitionBatch(ctx, refs[:n])
		if err != nil {
			return err
		}
		a.result.Applied += applied
		a.result.Skipped += n - applied
		refs = refs[n:]
	}
	return nil
}

const deleteUnreferencedDefinition = `DELETE FROM run_infos WHERE process_guid = ? AND definition_id = ?
 AND NOT EXISTS (SELECT 1 FROM desired_lrps d WHERE d.process_guid = ?
 AND (d.active_definition_id = ? OR d.healthy_definition_id = ?))
 AND NOT EXISTS (SELECT 1 FROM actual_lrps a WHERE a.process_guid = ? AND a.definition_id = ?)`

func (a *convergenceApplier) deleteDefinitionBatch(ctx context.Context, batch []convergence.DefinitionRef) (int, error) {
	s := a.s
	var applied int
	err := s.transact(ctx, "apply convergence: delete definitions", func(tx *sql.Tx) error {
		applied = 0
		locked := map[string]bool{}
		for _, ref := range batch {
			guid, id := ref.ProcessGuid, ref.DefinitionID
			// No row locks to take where the database has none (SQLite,
			// whose write transactions run one at a time).
			if lock := s.driver.lockForUpdate(); lock != "" {
				if !locked[guid] {
					locked[guid] = true
					if err := s.lockRows(ctx, tx, "SELECT 1 FROM desired_lrps WHERE process_guid = ?"+lock, guid); err != nil {
						return err
					}
				}
				if err := s.lockRows(ctx, tx, "SELECT 1 FROM run_infos WHERE process_guid = ? AND definition_id = ?"+lock, guid, id); err != nil {
					return err
				}
			}
			res, err := s.exec(ctx, tx, deleteUnreferencedDefinition, guid, id, guid, id, id, guid, id)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			applied += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return applied, nil
}

// lockRows runs a locking SELECT for its locks alone.
func (s *SQLDB) lockRows(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	return s.eachRow(ctx, tx, query, args, func(*sql.Rows) error { return nil })
}
