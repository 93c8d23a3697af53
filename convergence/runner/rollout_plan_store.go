package runner

import (
	"context"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// RolloutPlanStore is what a rollout plan reads: nothing else, and it
// writes nothing.
type RolloutPlanStore interface {
	ConvergenceSnapshot(ctx context.Context, processGuids []string) (*convergence.Snapshot, error)
	Definitions(ctx context.Context, processGuid string) ([]*models.DefinitionSummary, error)
}

// RolloutPlanner answers dry runs of updates (POST /v1/rollouts/plan) on
// the board's live state, with the planner configuration, rollout
// interval, clock and presence grace its convergence runner has.
type RolloutPlanner struct {
	store RolloutPlanStore
	cfg   RunnerConfig
}

// NewRolloutPlanner plans with cfg, the board's runner configuration
// (defaults filled in as NewRunner does).
func NewRolloutPlanner(store RolloutPlanStore, cfg RunnerConfig) *RolloutPlanner {
	return &RolloutPlanner{store: store, cfg: cfg.withDefaults()}
}

// Plan reads the LRP's targeted snapshot (its rows, and every cell with
// what every other LRP uses on it) and its definitions, and plays the
// update on them (PlanRollout). The request is valid (its Validate); an
// LRP that does not exist is ResourceNotFound.
func (p *RolloutPlanner) Plan(ctx context.Context, req *models.RolloutPlanRequest) (*models.RolloutPlan, error) {
	guid := req.GetProcessGuid()
	snapshot, err := p.store.ConvergenceSnapshot(ctx, []string{guid})
	if err != nil {
		return nil, err
	}
	if snapshot.DesiredOf(guid) == nil {
		return nil, models.NewError(models.Error_ResourceNotFound, "desired_lrp %q not found", guid)
	}
	summaries, err := p.store.Definitions(ctx, guid)
	if err != nil {
		return nil, err
	}
	definitions := make([]convergence.DefinitionRow, len(summaries))
	for i, def := range summaries {
		definitions[i] = convergence.DefinitionRow{
			ProcessGuid: guid, DefinitionID: def.GetDefinitionId(), CreatedAt: def.GetCreatedAt(),
			MemoryMB: def.GetMemoryMb(), DiskMB: def.GetDiskMb(),
		}
	}
	planner := p.cfg.Planner
	if p.cfg.PresenceGrace != nil {
		planner.PresenceGrace = p.cfg.PresenceGrace()
	}
	return convergence.PlanRollout(convergence.DryRun{
		Snapshot: snapshot, ProcessGuid: guid, Definitions: definitions, Update: req.GetUpdate(),
		ReadyAfter: models.Millis(req.GetReadyAfterMs()),
		Now:        p.cfg.Now(), Config: planner, RolloutInterval: p.cfg.RolloutInterval,
	})
}
