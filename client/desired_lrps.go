package client

import (
	"context"
	"fmt"

	"github.com/corkboard/corkboard/models"
)

// DesiredLRPFilter narrows list reads; zero values match everything.
type DesiredLRPFilter struct {
	Domain       string
	ProcessGuids []string
}

// DesireLRP stores lrp with its first definition and returns it as stored.
// It is never retried (see the package comment).
func (c *Client) DesireLRP(ctx context.Context, lrp *models.DesiredLRP) (*models.DesiredLRP, error) {
	stored, _, err := c.DesireLRPWithOperation(ctx, lrp)
	return stored, err
}

// DesireLRPWithOperation is DesireLRP that also returns the id of the
// operation that recorded the desire.
func (c *Client) DesireLRPWithOperation(ctx context.Context, lrp *models.DesiredLRP) (*models.DesiredLRP, string, error) {
	var resp models.DesireLRPResponse
	if err := c.call(ctx, models.RouteDesireDesiredLRP, &models.DesireLRPRequest{DesiredLrp: lrp}, &resp, sendOnce); err != nil {
		return nil, "", err
	}
	stored, err := required(models.RouteDesireDesiredLRP, resp.GetDesiredLrp())
	return stored, resp.GetOperationId(), err
}

// DesiredLRPByProcessGuid returns the LRP with its active definition.
func (c *Client) DesiredLRPByProcessGuid(ctx context.Context, processGuid string) (*models.DesiredLRP, error) {
	var resp models.DesiredLRPResponse
	req := &models.DesiredLRPByProcessGuidRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RouteDesiredLRPByProcessGuid, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return required(models.RouteDesiredLRPByProcessGuid, resp.GetDesiredLrp())
}

// DesiredLRPs lists the matching LRPs with their active definitions.
func (c *Client) DesiredLRPs(ctx context.Context, filter DesiredLRPFilter) ([]*models.DesiredLRP, error) {
	var resp models.DesiredLRPsResponse
	req := &models.DesiredLRPsRequest{Domain: filter.Domain, ProcessGuids: filter.ProcessGuids}
	if err := c.call(ctx, models.RouteDesiredLRPs, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetDesiredLrps(), nil
}

// DesiredLRPSchedulingInfos lists the matching LRPs without run definitions.
func (c *Client) DesiredLRPSchedulingInfos(ctx context.Context, filter DesiredLRPFilter) ([]*models.DesiredLRPSchedulingInfo, error) {
	var resp models.DesiredLRPSchedulingInfosResponse
	req := &models.DesiredLRPSchedulingInfosRequest{Domain: filter.Domain, ProcessGuids: filter.ProcessGuids}
	if err := c.call(ctx, models.RouteDesiredLRPSchedulingInfos, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetDesiredLrpSchedulingInfos(), nil
}

// UpdateDesiredLRP applies update and returns the LRP as it now stands. It is
// retried only when RepeatableUpdate(update) holds.
func (c *Client) UpdateDesiredLRP(ctx context.Context, processGuid string, update *models.DesiredLRPUpdate) (*models.DesiredLRP, error) {
	lrp, _, err := c.UpdateDesiredLRPWithOperation(ctx, processGuid, update)
	return lrp, err
}

// UpdateDesiredLRPWithOperation is UpdateDesiredLRP that also returns the
// id of the operation that recorded the update (PENDING when queued). When
// a retry repeated a named definition update whose first answer was lost,
// it is the repeat's operation: an UPDATE that changed nothing, the first
// attempt's operation doing the work (cork operations GUID shows both).
func (c *Client) UpdateDesiredLRPWithOperation(ctx context.Context, processGuid string, update *models.DesiredLRPUpdate) (*models.DesiredLRP, string, error) {
	var resp models.UpdateDesiredLRPResponse
	req := &models.UpdateDesiredLRPRequest{ProcessGuid: processGuid, Update: update}
	if err := c.call(ctx, models.RouteUpdateDesiredLRP, req, &resp, repeat(RepeatableUpdate(update))); err != nil {
		return nil, "", err
	}
	lrp, err := required(models.RouteUpdateDesiredLRP, resp.GetDesiredLrp())
	return lrp, resp.GetOperationId(), err
}

// RepeatableUpdate reports whether sending update twice has the effect of
// sending it once: a new definition under an update_identifier, with no
// other change, no modification tag, and neither queued nor validated. A
// queued update is not repeated: the repeat would queue the definition a
// second time, behind whatever other clients queued in between, and undo
// their changes when its turn came; a validated one would validate twice.
// Other changes (autoscaling settings among them) would overwrite what
// another client set in between.
func RepeatableUpdate(update *models.DesiredLRPUpdate) bool {
	return update.GetDefinition() != nil &&
		!update.GetQueue() && !update.GetValidate() &&
		update.GetUpdateIdentifier() != "" &&
		update.Instances == nil &&
		update.Routes == nil &&
		update.Annotation == nil &&
		update.UpdateStrategy == nil &&
		update.Autoscaling == nil &&
		update.ModificationTag == nil
}

// RemoveDesiredLRP removes the LRP. A retry after a lost answer may report
// ResourceNotFound for a removal that did happen (see the package comment).
func (c *Client) RemoveDesiredLRP(ctx context.Context, processGuid string) error {
	_, err := c.RemoveDesiredLRPWithOperation(ctx, processGuid)
	return err
}

// RemoveDesiredLRPWithOperation is RemoveDesiredLRP that also returns the
// id of the operation that recorded the removal.
func (c *Client) RemoveDesiredLRPWithOperation(ctx context.Context, processGuid string) (string, error) {
	var resp models.RemoveDesiredLRPResponse
	req := &models.RemoveDesiredLRPRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RouteRemoveDesiredLRP, req, &resp, safeToRepeat); err != nil {
		return "", err
	}
	return resp.GetOperationId(), nil
}

// required turns a successful answer that lacks its payload into an error,
// so callers never get (nil, nil).
func required[T any](route string, value *T) (*T, error) {
	if value == nil {
		return nil, fmt.Errorf("%s: board answered without a result", route)
	}
	return value, nil
}
