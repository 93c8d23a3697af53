package client

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// CellClient is the client a rep uses: the cell side of the API, on behalf
// of one cell. It is safe for concurrent use.
//
// Retries. RegisterCell (a heartbeat: registering twice leaves the same
// state) and BulkReport (a report of what the cell runs, answered from the
// board's current rows) are retried after a transport failure like reads
// are. The lifecycle calls (claim, start, crash, fail, remove) are sent
// once: if an answer is lost, the board may have applied the call, and a
// repeat could act on a row that convergence has moved on since (say, a
// crashed instance that was restarted elsewhere) or count a crash twice.
// The rep's next bulk report reconciles whatever a lost call left behind.
type CellClient struct {
	transport
	cellID string
}

// NewCellClient returns a client for the rep of cellID on the board at
// baseURL.
func NewCellClient(baseURL, cellID string, opts ...Option) *CellClient {
	return &CellClient{transport: newTransport(baseURL, opts), cellID: cellID}
}

// CellID is the cell this client speaks for.
func (c *CellClient) CellID() string {
	return c.cellID
}

// Instance names an instance a cell runs: the ORDINARY row of
// (ProcessGuid, Index), run as InstanceGuid.
type Instance struct {
	ProcessGuid  string
	Index        int32
	InstanceGuid string
}

// BulkReportResult is the board's answer to a bulk report.
type BulkReportResult struct {
	// Stop lists reported instances the board does not want on this cell.
	Stop []*models.ReportedInstance
	// Assigned lists instances placed on this cell and not yet claimed.
	Assigned []*models.ActualLRP
}

// RegisterCell registers the cell, or renews its presence, and returns how
// long the presence lasts: renew well within it. cell.cell_id must be the
// client's cell.
func (c *CellClient) RegisterCell(ctx context.Context, cell *models.Cell) (time.Duration, error) {
	if cell.GetCellId() != c.cellID {
		return 0, fmt.Errorf("register cell: cell_id %q is not this client's cell %q", cell.GetCellId(), c.cellID)
	}
	var resp models.RegisterCellResponse
	if err := c.call(ctx, models.RouteRegisterCell, &models.RegisterCellRequest{Cell: cell}, &resp, safeToRepeat); err != nil {
		return 0, err
	}
	return time.Duration(resp.GetPresenceTtlMs()) * time.Millisecond, nil
}

// ClaimActualLRP claims an instance placed on this cell, before starting
// it.
func (c *CellClient) ClaimActualLRP(ctx context.Context, instance Instance) (*models.ActualLRP, error) {
	req := &models.ClaimActualLRPRequest{
		ProcessGuid: instance.ProcessGuid, Index: instance.Index,
		InstanceGuid: instance.InstanceGuid, CellId: c.cellID,
	}
	return c.lifecycle(ctx, models.RouteClaimActualLRP, req)
}

// StartActualLRP reports the instance running, listening where netInfo
// says; routers send it traffic when routable.
func (c *CellClient) StartActualLRP(ctx context.Context, instance Instance, netInfo *models.NetInfo, routable bool) (*models.ActualLRP, error) {
	req := &models.StartActualLRPRequest{
		ProcessGuid: instance.ProcessGuid, Index: instance.Index,
		InstanceGuid: instance.InstanceGuid, CellId: c.cellID,
		NetInfo: netInfo, Routable: &routable,
	}
	return c.lifecycle(ctx, models.RouteStartActualLRP, req)
}

// CrashActualLRP reports that the instance's process died. A reason longer
// than models.MaxReasonBytes is cut to that length rather than refused, so
// that the crash is never lost over its description.
func (c *CellClient) CrashActualLRP(ctx context.Context, instance Instance, reason string) (*models.ActualLRP, error) {
	req := &models.CrashActualLRPRequest{
		ProcessGuid: instance.ProcessGuid, Index: instance.Index,
		InstanceGuid: instance.InstanceGuid, CellId: c.cellID,
		CrashReason: shorten(reason, models.MaxReasonBytes),
	}
	return c.lifecycle(ctx, models.RouteCrashActualLRP, req)
}

// FailActualLRP says this cell cannot run an instance placed on it; the
// board places it elsewhere. A placement error longer than
// models.MaxReasonBytes is cut to that length.
func (c *CellClient) FailActualLRP(ctx context.Context, processGuid string, index int32, placementError string) (*models.ActualLRP, error) {
	req := &models.FailActualLRPRequest{
		ProcessGuid: processGuid, Index: index, CellId: c.cellID,
		PlacementError: shorten(placementError, models.MaxReasonBytes),
	}
	return c.lifecycle(ctx, models.RouteFailActualLRP, req)
}

// RemoveActualLRP reports that the instance stopped and is gone; presence
// names which of its rows (ORDINARY, SUSPECT, ...).
func (c *CellClient) RemoveActualLRP(ctx context.Context, instance Instance, presence models.ActualLRP_Presence) error {
	req := &models.RemoveActualLRPRequest{
		ProcessGuid: instance.ProcessGuid, Index: instance.Index, Presence: presence,
		InstanceGuid: instance.InstanceGuid, CellId: c.cellID,
	}
	return c.call(ctx, models.RouteRemoveActualLRP, req, &models.ActualLRPLifecycleResponse{}, sendOnce)
}

// BulkReport tells the board everything this cell runs and returns what to
// stop and what to claim.
func (c *CellClient) BulkReport(ctx context.Context, instances []*models.ReportedInstance) (*BulkReportResult, error) {
	var resp models.BulkReportResponse
	req := &models.BulkReportRequest{CellId: c.cellID, Instances: instances}
	if err := c.call(ctx, models.RouteBulkReport, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return &BulkReportResult{Stop: resp.GetStop(), Assigned: resp.GetAssigned()}, nil
}

func (c *CellClient) lifecycle(ctx context.Context, route string, req proto.Message) (*models.ActualLRP, error) {
	var resp models.ActualLRPLifecycleResponse
	if err := c.call(ctx, route, req, &resp, sendOnce); err != nil {
		return nil, err
	}
	return required(route, resp.GetActualLrp())
}

// shorten cuts s to at most limit bytes, at a character boundary.
func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
