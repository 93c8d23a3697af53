package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/corkboard/corkboard/models"
)

// Definitions lists an LRP's stored definitions, newest first, marking the
// active and healthy ones and saying whether each became healthy and
// whether it failed validation. Definitions outlive a removed LRP; they are
// then listed with neither mark. An LRP with no definitions is
// ResourceNotFound.
func (s *SQLDB) Definitions(ctx context.Context, processGuid string) ([]*models.DefinitionSummary, error) {
	summaries, err := s.keptDefinitions(ctx, s.conn, processGuid)
	if err != nil {
		return nil, asModelError("list definitions", err)
	}
	if len(summaries) == 0 {
		return nil, errNotFound("desired_lrp %q has no definitions", processGuid)
	}
	return summaries, nil
}

// keptDefinitions reads the LRP's stored definitions as Definitions lists
// them, through q (a transaction holding the LRP's row lock reads them
// consistent with its marks).
func (s *SQLDB) keptDefinitions(ctx context.Context, q queryer, processGuid string) ([]*models.DefinitionSummary, error) {
	var summaries []*models.DefinitionSummary
	err := s.eachRow(ctx, q, `SELECT r.definition_id, r.created_at, r.memory_mb, r.disk_mb, r.became_healthy, r.failed_validation,
 COALESCE(d.active_definition_id, ''), COALESCE(d.healthy_definition_id, '')
 FROM run_infos r LEFT JOIN desired_lrps d ON d.process_guid = r.process_guid
 WHERE r.process_guid = ?
 ORDER BY r.created_at DESC, r.definition_id DESC`, []any{processGuid}, func(rows *sql.Rows) error {
		summary := &models.DefinitionSummary{}
		var activeID, healthyID string
		if err := rows.Scan(&summary.DefinitionId, &summary.CreatedAt, &summary.MemoryMb, &summary.DiskMb,
			&summary.BecameHealthy, &summary.FailedValidation, &activeID, &healthyID); err != nil {
			return err
		}
		summary.Active = summary.DefinitionId == activeID
		summary.Healthy = summary.DefinitionId == healthyID
		summaries = append(summaries, summary)
		return nil
	})
	return summaries, err
}

// markBecameHealthy records that the LRP's definition became its healthy
// definition (it stays so: a later rollout does not undo that it ran).
func (s *SQLDB) markBecameHealthy(ctx context.Context, tx *sql.Tx, processGuid, definitionID string) error {
	_, err := s.exec(ctx, tx, "UPDATE run_infos SET became_healthy = ? WHERE process_guid = ? AND definition_id = ? AND became_healthy = ?",
		true, processGuid, definitionID, false)
	return err
}

// markFailedValidation records that a validated update to the LRP's
// definition ended in ERROR before the definition became active.
func (s *SQLDB) markFailedValidation(ctx context.Context, tx *sql.Tx, processGuid, definitionID string) error {
	_, err := s.exec(ctx, tx, "UPDATE run_infos SET failed_validation = ? WHERE process_guid = ? AND definition_id = ? AND failed_validation = ?",
		true, processGuid, definitionID, false)
	return err
}

func (s *SQLDB) Definition(ctx context.Context, processGuid, definitionID string) (*models.LRPDefinition, error) {
	var blob []byte
	err := s.queryRow(ctx, s.conn, "SELECT definition FROM run_infos WHERE process_guid = ? AND definition_id = ?",
		processGuid, definitionID).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound("definition %q of desired_lrp %q not found", definitionID, processGuid)
	}
	if err != nil {
		return nil, asModelError("get definition", err)
	}
	return s.decodeStoredDefinition(processGuid, definitionID, blob)
}
