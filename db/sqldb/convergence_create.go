package sqldb

import (
	"context"
	"database/sql"
	"slices"

	"github.com/lib/pq"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var createdActualLRPColumns = []string{
	"process_guid", "instance_index", "presence", "domain", "cell_id", "definition_id", "state",
	"since", "crash_reason", "placement_error", "modification_tag_epoch", "modification_tag_index",
}

// createRows inserts the new UNCLAIMED ORDINARY rows in batches; a key
// that is taken (an instance created since the snapshot) is skipped.
func (a *convergenceApplier) createRows(ctx context.Context, creates []db.NewActualLRP) error {
	for len(creates) > 0 {
		n := convergenceBatchLen(len(creates), func(i int) db.ActualLRPKey {
			return db.ActualLRPKey{ProcessGuid: creates[i].ProcessGuid, Index: creates[i].Index, Presence: models.ActualLRP_ORDINARY}
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

func (a *convergenceApplier) createBatch(ctx context.Context, batch []db.NewActualLRP) (int, error) {
	s := a.s
	rows := make([]*models.ActualLRP, len(batch))
	for i, c := range batch {
		rows[i] = withRow(&models.ActualLRP{ModificationTag: &models.ModificationTag{Epoch: newGUID()}}, convergence.Created(c, a.now))
	}
	placing := slices.ContainsFunc(batch, func(c db.NewActualLRP) bool { return c.CellID != "" })
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
	if s.dialect == Postgres {
		return insertCreatedPostgres(rows, now)
	}
	args := make([]any, 0, len(rows)*len(createdActualLRPColumns))
	for _, lrp := range rows {
		args = append(args, lrp.ProcessGuid, lrp.Index, presenceOrdinary, lrp.Domain, lrp.CellId,
			lrp.DefinitionId, stateUnclaimed, now, "", lrp.PlacementError, lrp.ModificationTag.Epoch, int64(0))
	}
	return s.dialect.insertMissing("actual_lrps", createdActualLRPColumns, actualLRPKey, len(rows)), args
}

// insertCreatedPostgres binds one array per column instead of twelve
// parameters per row: Postgres then parses and plans a short statement
// rather than a thousand-row VALUES list, which makes a batch of creates
// several times faster.
func insertCreatedPostgres(rows []*models.ActualLRP, now int64) (string, []any) {
	n := len(rows)
	guids, domains, cells, definitions, placementErrors, epochs := make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	indices := make([]int64, n)
	for i, lrp := range rows {
		guids[i], indices[i], domains[i], cells[i] = lrp.ProcessGuid, int64(lrp.Index), lrp.Domain, lrp.CellId
		definitions[i], placementErrors[i], epochs[i] = lrp.DefinitionId, lrp.PlacementError, lrp.ModificationTag.Epoch
	}
	const insert = `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, cell_id,
 definition_id, state, since, crash_reason, placement_error, modification_tag_epoch, modification_tag_index)
 SELECT process_guid, instance_index, $1, domain, cell_id, definition_id, $2, $3, '', placement_error, epoch, 0
 FROM unnest($4::text[], $5::integer[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
 AS created (process_guid, instance_index, domain, cell_id, definition_id, placement_error, epoch)
 ON CONFLICT (process_guid, instance_index, presence) DO NOTHING`
	return insert, []any{presenceOrdinary, stateUnclaimed, now, pq.Array(guids), pq.Array(indices),
		pq.Array(domains), pq.Array(cells), pq.Array(definitions), pq.Array(placementErrors), pq.Array(epochs)}
}

// ownRows tells which of rows, just offered to an insert that skips taken
// keys, it stored: the stored row has the fresh, random epoch this insert
// gave it. Convergence creates and desires both use it.
func (s *SQLDB) ownRows(ctx context.Context, tx *sql.Tx, rows []*models.ActualLRP) ([]*models.ActualLRP, error) {
	keys := make([]db.ActualLRPKey, len(rows))
	for i, lrp := range rows {
		keys[i] = db.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: models.ActualLRP_ORDINARY}
	}
	query := s.dialect.selectByKeys(actualLRPKeys, "process_guid, instance_index, modification_tag_epoch", len(keys), false)
	epochs := make(map[db.ActualLRPKey]string, len(rows))
	err := s.eachRow(ctx, tx, query, actualKeyArgs(keys), func(result *sql.Rows) error {
		var guid, epoch string
		var index int64
		if err := result.Scan(&guid, &index, &epoch); err != nil {
			return err
		}
		epochs[db.ActualLRPKey{ProcessGuid: guid, Index: int32(index), Presence: models.ActualLRP_ORDINARY}] = epoch
		return nil
	})
	if err != nil {
		return nil, err
	}
	var own []*models.ActualLRP
	for i, lrp := range rows {
		if epochs[keys[i]] == lrp.ModificationTag.Epoch {
			own = append(own, lrp)
		}
	}
	return own, nil
}
