package sqldb

import (
	"context"
	"database/sql"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

var createdActualLRPColumns = []string{
	"process_guid", "instance_index", "presence", "domain", "cell_id", "definition_id", "state",
	"since", "crash_reason", "placement_error", "modification_tag_epoch", "modification_tag_index",
}

// createRows inserts the new UNCLAIMED ORDINARY rows in batches; a key
// that is taken (an instance created since the snapshot) is skipped.
func (a *convergenceApplier) createRows(ctx context.Context, creates []convergence.NewActualLRP) error {
	for len(creates) > 0 {
		n := convergenceBatchLen(len(creates), func(i int) models.ActualLRPKey {
			return models.ActualLRPKey{ProcessGuid: creates[i].ProcessGuid, Index: creates[i].Index, Presence: models.ActualLRP_ORDINARY}
		})
		applied, err := a.createBatch(ctx, creates[:n])
		if err != nil {
			return err
		}
		a.result.Applied += applied
		a.result.Skipped += n - applied
		creates = creates[n:]
	}
	return nil
}

func (a *convergenceApplier) createBatch(ctx context.Context, batch []convergence.NewActualLRP) (int, error) {
	s := a.s
	rows := make([]*models.ActualLRP, len(batch))
	for i, c := range batch {
		rows[i] = withRow(&models.ActualLRP{ModificationTag: &models.ModificationTag{Epoch: newEpoch()}}, convergence.Created(c, a.now))
	}
	placing := slices.ContainsFunc(batch, func(c convergence.NewActualLRP) bool { return c.CellID != "" })
	placed := false
	var applied int
	err := s.transactPublishing(ctx, "apply convergence: create", func(tx *sql.Tx) ([]models.Event, error) {
		rows := rows
		if placing {
			var err error
			if placed, err = a.guard.claim(ctx, s, tx); err != nil {
				return nil, err
			}
			if !placed {
				// Another writer placed since the snapshot: the rows go
				// in without a cell, and the next pass places them.
				rows = withoutCells(rows)
			}
		}
		insert, args := s.insertCreated(rows, a.now)
		res, err := s.exec(ctx, tx, insert, args...)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		created := rows
		if int(n) != len(rows) {
			if created, err = s.ownRows(ctx, tx, rows); err != nil {
				return nil, err
			}
		}
		applied = len(created)
		events := make([]models.Event, len(created))
		for i, lrp := range created {
			events[i] = models.ActualLRPCreated(lrp)
		}
		return events, nil
	})
	if err != nil {
		return 0, err
	}
	if placing {
		a.guard.settle(placed)
	}
	return applied, nil
}

// withoutCells copies rows with their cells cleared.
func withoutCells(rows []*models.ActualLRP) []*models.ActualLRP {
	unplaced := make([]*models.ActualLRP, len(rows))
	for i, lrp := range rows {
		c := proto.Clone(lrp).(*models.ActualLRP)
		c.CellId = ""
		unplaced[i] = c
	}
	return unplaced
}

// insertCreated is the statement inserting rows (created at now), each
// unless its key is taken, so that the affected row count is the number
// inserted.
func (s *SQLDB) insertCreated(rows []*models.ActualLRP, now int64) (string, []any) {
	if insert := s.driver.insertCreated(); insert != nil {
		return insert(rows, now)
	}
	args := make([]any, 0, len(rows)*len(createdActualLRPColumns))
	for _, lrp := range rows {
		args = append(args, lrp.ProcessGuid, lrp.Index, presenceOrdinary, lrp.Domain, lrp.CellId,
			lrp.DefinitionId, stateUnclaimed, now, "", lrp.PlacementError, lrp.ModificationTag.Epoch, int64(0))
	}
	return s.driver.insertMissing("actual_lrps", createdActualLRPColumns, actualLRPKey, len(rows)), args
}

// ownRows tells which of rows, just offered to an insert that skips taken
// keys, it stored: the stored row has the fresh, random tag epoch this insert
// gave it. Convergence creates and desires both use it.
func (s *SQLDB) ownRows(ctx context.Context, tx *sql.Tx, rows []*models.ActualLRP) ([]*models.ActualLRP, error) {
	keys := make([]models.ActualLRPKey, len(rows))
	for i, lrp := range rows {
		keys[i] = models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: models.ActualLRP_ORDINARY}
	}
	query, args := s.driver.selectByKeys(actualLRPKeys, "process_guid, instance_index, modification_tag_epoch", actualKeyArgs(keys), false)
	tagEpochs := make(map[models.ActualLRPKey]string, len(rows))
	err := s.eachRow(ctx, tx, query, args, func(result *sql.Rows) error {
		var guid, tagEpoch string
		var index int64
		if err := result.Scan(&guid, &index, &tagEpoch); err != nil {
			return err
		}
		tagEpochs[models.ActualLRPKey{ProcessGuid: guid, Index: int32(index), Presence: models.ActualLRP_ORDINARY}] = tagEpoch
		return nil
	})
	if err != nil {
		return nil, err
	}
	var own []*models.ActualLRP
	for i, lrp := range rows {
		if tagEpochs[keys[i]] == lrp.ModificationTag.Epoch {
			own = append(own, lrp)
		}
	}
	return own, nil
}
