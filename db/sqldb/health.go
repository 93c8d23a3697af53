package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/corkboard/corkboard/models"
)

// LogHealth appends one definition_health event per entry of a cell's
// health report (models.DefinitionHealthLogged), in order, in one
// transaction that writes no table but the log's: the report is a
// measurement, not state, and every board's signals read it from the
// log. An empty report commits nothing.
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
	events := make([]models.Event, len(health))
	for i, h := range health {
		events[i] = models.DefinitionHealthLogged(cellID, h)
	}
	return s.transactPublishing(ctx, "log health", func(*sql.Tx) ([]models.Event, error) {
		return events, nil
	})
}
