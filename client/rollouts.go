package client

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/models"
)

// RolloutStatus reports where the LRP's rolling update stands.
func (c *Client) RolloutStatus(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	var resp models.RolloutStatusResponse
	req := &models.RolloutStatusRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RouteRolloutStatus, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return required(models.RouteRolloutStatus, resp.GetStatus())
}

// Rollback re-activates a kept definition (definitionID; empty lets the
// board choose, see models.RollbackRequest) and rolls the instances back
// to it, as a fast rollout with fast (models.RollbackRequest.fast). The
// warning is set when the named definition failed validation or never
// became healthy (the rollback went ahead). It is not repeated after a
// lost answer: a second rollback to the definition it made active is
// refused.
func (c *Client) Rollback(ctx context.Context, processGuid, definitionID string, fast bool) (status *models.RolloutStatus, warning string, err error) {
	var resp models.RollbackResponse
	req := &models.RollbackRequest{ProcessGuid: processGuid, DefinitionId: definitionID, Fast: fast}
	if err := c.call(ctx, models.RouteRollback, req, &resp, sendOnce); err != nil {
		return nil, "", err
	}
	status, err = required(models.RouteRollback, resp.GetStatus())
	return status, resp.GetWarning(), err
}

// AbortRollout rolls the instances back to the healthy definition, fast
// as Rollback's. Like Rollback, it is not repeated after a lost answer.
func (c *Client) AbortRollout(ctx context.Context, processGuid string, fast bool) (*models.RolloutStatus, error) {
	var resp models.AbortRolloutResponse
	req := &models.AbortRolloutRequest{ProcessGuid: processGuid, Fast: fast}
	if err := c.call(ctx, models.RouteAbortRollout, req, &resp, sendOnce); err != nil {
		return nil, err
	}
	return required(models.RouteAbortRollout, resp.GetStatus())
}

// Staged phases (see models.StagedRollout; an update starts one with
// DesiredLRPUpdate.Staged). Each call records an operation of its own
// (PROMOTE, PAUSE, RESUME) and returns its id beside the status: the
// status's operation_id names the operation that started the rollout.
// None is repeated after a lost answer: a repeated pause or resume that had
// landed is refused (InvalidStateTransition) and would hide the success,
// and a repeated promote would start its phase a second time, from the
// share the first one had already reached.

// PromoteRollout starts the next phase of the LRP's staged rollout: from
// the share that stands now to toPercent, growing at rate (nil: at once).
func (c *Client) PromoteRollout(ctx context.Context, processGuid string, toPercent float64, rate *models.SafeRate) (*models.RolloutStatus, string, error) {
	var resp models.PromoteRolloutResponse
	req := &models.PromoteRolloutRequest{ProcessGuid: processGuid, ToPercent: toPercent, SafeRate: rate}
	if err := c.call(ctx, models.RoutePromoteRollout, req, &resp, sendOnce); err != nil {
		return nil, "", err
	}
	status, err := required(models.RoutePromoteRollout, resp.GetStatus())
	if err != nil {
		return nil, "", err
	}
	return status, resp.GetOperationId(), nil
}

// PauseRollout freezes the clock of the LRP's staged phase: its share
// stops growing and its progress deadline stops running.
func (c *Client) PauseRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, string, error) {
	var resp models.PauseRolloutResponse
	req := &models.PauseRolloutRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RoutePauseRollout, req, &resp, sendOnce); err != nil {
		return nil, "", err
	}
	status, err := required(models.RoutePauseRollout, resp.GetStatus())
	if err != nil {
		return nil, "", err
	}
	return status, resp.GetOperationId(), nil
}

// ResumeRollout starts the clock of the LRP's paused staged phase again.
func (c *Client) ResumeRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, string, error) {
	var resp models.ResumeRolloutResponse
	req := &models.ResumeRolloutRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RouteResumeRollout, req, &resp, sendOnce); err != nil {
		return nil, "", err
	}
	status, err := required(models.RouteResumeRollout, resp.GetStatus())
	if err != nil {
		return nil, "", err
	}
	return status, resp.GetOperationId(), nil
}

// EditRollout changes the limits of the LRP's rollout under way (see
// models.EditRolloutRequest; edit.ProcessGuid names the LRP) and returns
// the status and the id of the EDIT operation it recorded. It is not
// repeated after a lost answer: a repeat would record a second edit, and
// could undo an edit another client made in between.
func (c *Client) EditRollout(ctx context.Context, edit *models.EditRolloutRequest) (*models.RolloutStatus, string, error) {
	var resp models.EditRolloutResponse
	if err := c.call(ctx, models.RouteEditRollout, edit, &resp, sendOnce); err != nil {
		return nil, "", err
	}
	status, err := required(models.RouteEditRollout, resp.GetStatus())
	if err != nil {
		return nil, "", err
	}
	return status, resp.GetOperationId(), nil
}

// RolloutPlan asks what update would do to the LRP, pass by pass, without
// doing it: nothing is written, so it is repeated after a lost answer.
// readyAfter is how long each new instance is assumed to take, once
// placed, to be RUNNING and routable.
func (c *Client) RolloutPlan(ctx context.Context, processGuid string, update *models.DesiredLRPUpdate, readyAfter time.Duration) (*models.RolloutPlan, error) {
	var resp models.RolloutPlanResponse
	req := &models.RolloutPlanRequest{ProcessGuid: processGuid, Update: update, ReadyAfterMs: readyAfter.Milliseconds()}
	if err := c.call(ctx, models.RouteRolloutPlan, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return required(models.RouteRolloutPlan, resp.GetPlan())
}
