package sqldb

import (
	"context"
	"errors"

	"github.com/corkboard/corkboard/models"
)

// Placeholder until the rollout storage lands in this file.
var errRolloutsPending = errors.New("rollouts: not built yet")

func (s *SQLDB) RolloutStatus(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	return nil, errRolloutsPending
}

func (s *SQLDB) Rollback(ctx context.Context, processGuid, definitionID string) (*models.RolloutStatus, error) {
	return nil, errRolloutsPending
}

func (s *SQLDB) AbortRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	return nil, errRolloutsPending
}
