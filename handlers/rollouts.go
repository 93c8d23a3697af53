package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// rolloutStatus answers the stored status, each definition with what this
// board's signals hold of it and of each of its instances.
func (h *storeHandlers) rolloutStatus(ctx context.Context, req *models.RolloutStatusRequest) (*models.RolloutStatusResponse, error) {
	status, err := h.store.RolloutStatus(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	if h.signals != nil {
		for _, d := range status.GetDefinitions() {
			d.Signals = h.signals.Figures(req.GetProcessGuid(), d.GetDefinitionId(), int(d.GetInstances()))
			d.InstanceSignals = h.signals.Instances(req.GetProcessGuid(), d.GetDefinitionId())
		}
	}
	return &models.RolloutStatusResponse{Status: status}, nil
}

// rollback re-activates a kept definition and asks convergence to start
// rolling to it at once, as an update does. Like abort, it records an
// operation naming the caller; the store puts its id in the status, and
// in the note the warning about a definition not known to run.
func (h *storeHandlers) rollback(ctx context.Context, req *models.RollbackRequest) (*models.RollbackResponse, error) {
	ctx, note := noteOperation(ctx)
	status, err := h.store.Rollback(ctx, req.GetProcessGuid(), req.GetDefinitionId(), req.GetFast())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.RollbackResponse{Status: status, Warning: note.Warning}, nil
}

func (h *storeHandlers) abortRollout(ctx context.Context, req *models.AbortRolloutRequest) (*models.AbortRolloutResponse, error) {
	ctx, _ = noteOperation(ctx)
	status, err := h.store.AbortRollout(ctx, req.GetProcessGuid(), req.GetFast())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.AbortRolloutResponse{Status: status}, nil
}

// Staged phases. Promote, pause and resume each record an operation of
// their own (PROMOTE, PAUSE, RESUME) that does not start a rollout, so the
// status's operation_id still names the update that started it; the
// response's operation_id names the operation this call recorded.

// promoteRollout starts the next staged phase and asks for a pass at once,
// so that the first instance of the new phase does not wait for the
// targeted pass.
func (h *storeHandlers) promoteRollout(ctx context.Context, req *models.PromoteRolloutRequest) (*models.PromoteRolloutResponse, error) {
	ctx, note := noteOperation(ctx)
	status, err := h.store.PromoteRollout(ctx, req.GetProcessGuid(), req.GetToPercent(), req.GetSafeRate())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.PromoteRolloutResponse{Status: status, OperationId: note.Operation.GetId()}, nil
}

// pauseRollout freezes the phase's clock. It asks for a pass like every
// other write to a rollout: the planner then works from the paused record
// rather than the one it read before.
func (h *storeHandlers) pauseRollout(ctx context.Context, req *models.PauseRolloutRequest) (*models.PauseRolloutResponse, error) {
	ctx, note := noteOperation(ctx)
	status, err := h.store.PauseRollout(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.PauseRolloutResponse{Status: status, OperationId: note.Operation.GetId()}, nil
}

// resumeRollout starts the phase's clock again and asks for a pass, so
// that the share the resumed phase allows is acted on at once.
func (h *storeHandlers) resumeRollout(ctx context.Context, req *models.ResumeRolloutRequest) (*models.ResumeRolloutResponse, error) {
	ctx, note := noteOperation(ctx)
	status, err := h.store.ResumeRollout(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.ResumeRolloutResponse{Status: status, OperationId: note.Operation.GetId()}, nil
}

// editRollout changes the limits of a rollout under way and asks for a
// pass at once, so that the new limits are acted on without waiting for
// the targeted pass. Like promote, pause and resume it records an
// operation of its own (EDIT), whose id the response carries.
func (h *storeHandlers) editRollout(ctx context.Context, req *models.EditRolloutRequest) (*models.EditRolloutResponse, error) {
	ctx, note := noteOperation(ctx)
	status, err := h.store.EditRollout(ctx, req)
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.EditRolloutResponse{Status: status, OperationId: note.Operation.GetId()}, nil
}

// rolloutPlan answers what an update would do, pass by pass, without
// doing it: no operation, no event, no row is written, and convergence is
// not asked for a pass.
func (h *storeHandlers) rolloutPlan(ctx context.Context, req *models.RolloutPlanRequest) (*models.RolloutPlanResponse, error) {
	if h.planRollout == nil {
		return nil, models.NewError(models.Error_Unavailable, "this board does not plan rollouts")
	}
	// Refused as the update itself would be.
	if err := h.checkUpdateHosts(req.GetUpdate()); err != nil {
		return nil, err
	}
	plan, err := h.planRollout(ctx, req)
	if err != nil {
		return nil, err
	}
	return &models.RolloutPlanResponse{Plan: plan}, nil
}
