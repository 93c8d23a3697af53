package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/corkboard/corkboard/models"
)

// LogHealth appends one definition_health event per entry of a cell's
// health report (models.DefinitionHealthLogged) that is about the cell's
// own instances (models.HealthHeldBy, given the rows placed on the cell),
// in order, in one transaction that writes no table but the log's: the
// report is a measurement, not state, and every board's signals read it
// from the log. A report with nothing of the cell's commits nothing.
func (s *SQLDB) LogHealth(ctx context.Context, cellID string, health []*models.DefinitionHealth) error {
	if cellID == "" {
		return errInvalid("cell_id", "required")
	}
	for i, h := range health {
		if h == nil {
			return errInvalid(fmt.Sprintf("health[%d]", i), "required")
		}
	}
	if len(health) == 0 {
		return nil
	}
	held, err := s.heldInstances(ctx, cellID)
	if err != nil {
		return err
	}
	health = models.HealthHeldBy(health, held)
	if len(health) == 0 {
		return nil
	}
	events := make([]models.Event, len(health))
	for i, h := range health {
		events[i] = models.DefinitionHealthLogged(cellID, h)
	}
	return s.transactPublishing(ctx, "log health", func(*sql.Tx) ([]models.Event, error) {
		return events, nil
	})
}

// heldInstances are the instances whose rows (of any presence) are placed
// on the cell.
func (s *SQLDB) heldInstances(ctx context.Context, cellID string) ([]models.HeldInstance, error) {
	var held []models.HeldInstance
	err := s.eachRow(ctx, s.conn, "SELECT process_guid, definition_id, instance_guid FROM actual_lrps WHERE cell_id = ?", []any{cellID}, func(rows *sql.Rows) error {
		var h models.HeldInstance
		if err := rows.Scan(&h.ProcessGuid, &h.DefinitionID, &h.InstanceGuid); err != nil {
			return err
		}
		held = append(held, h)
		return nil
	})
	if err != nil {
		return nil, asModelError("log health", err)
	}
	return held, nil
}
