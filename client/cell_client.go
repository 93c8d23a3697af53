package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// CellClient is the client a rep uses: the cell side of the API, on behalf
// of one cell. It is safe for concurrent use.
//
// Retries. RegisterCell and Heartbeat (registering twice leaves the same
// state), BulkReport (a report of what the cell runs, answered from the
// board's current rows), ReportOccupancy (each change sets a value) and
// EvacuateActualLRP (a repeat finds the
// evacuation done and answers the same) are retried after a transport
// failure like reads are. The lifecycle calls (claim, start, crash, fail, remove) are sent
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
// client's cell. It is a heartbeat that leaves the draining flag as it is;
// a rep that needs to learn of a drain uses Heartbeat.
func (c *CellClient) RegisterCell(ctx context.Context, cell *models.Cell) (time.Duration, error) {
	result, err := c.Heartbeat(ctx, cell, false)
	if err != nil {
		return 0, err
	}
	return result.PresenceTTL, nil
}

// HeartbeatResult is the board's answer to a registration.
type HeartbeatResult struct {
	// PresenceTTL is how long the presence lasts from now: renew well
	// within it.
	PresenceTTL time.Duration
	// Draining says the cell is being drained (cork cell drain): evacuate
	// every instance (EvacuateActualLRP) and place nothing new.
	Draining bool
	// MaxAssetDownloads is the board's max_asset_downloads_per_cell: how
	// many asset downloads the rep runs at once (0: no limit).
	MaxAssetDownloads int32
}

// Heartbeat registers the cell, or renews its presence, and says whether
// it is draining. freshStart is for the rep's first registration after it
// starts: it clears a draining flag left from before (a restarted rep runs
// nothing to evacuate). Later heartbeats pass false and keep the flag.
// cell.cell_id must be the client's cell.
func (c *CellClient) Heartbeat(ctx context.Context, cell *models.Cell, freshStart bool) (*HeartbeatResult, error) {
	if cell.GetCellId() != c.cellID {
		return nil, fmt.Errorf("register cell: cell_id %q is not this client's cell %q", cell.GetCellId(), c.cellID)
	}
	var resp models.RegisterCellResponse
	req := &models.RegisterCellRequest{Cell: cell, FreshStart: freshStart}
	if err := c.call(ctx, models.RouteRegisterCell, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return &HeartbeatResult{
		PresenceTTL:       models.Millis(resp.GetPresenceTtlMs()),
		Draining:          resp.GetDraining(),
		MaxAssetDownloads: resp.GetMaxAssetDownloads(),
	}, nil
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
		CrashReason: models.CutText(reason, models.MaxReasonBytes),
	}
	return c.lifecycle(ctx, models.RouteCrashActualLRP, req)
}

// FailActualLRP says this cell cannot run an instance placed on it; the
// board places it elsewhere. A placement error longer than
// models.MaxReasonBytes is cut to that length.
func (c *CellClient) FailActualLRP(ctx context.Context, processGuid string, index int32, placementError string) (*models.ActualLRP, error) {
	req := &models.FailActualLRPRequest{
		ProcessGuid: processGuid, Index: index, CellId: c.cellID,
		PlacementError: models.CutText(placementError, models.MaxReasonBytes),
	}
	return c.lifecycle(ctx, models.RouteFailActualLRP, req)
}

// SetRoutable changes whether routers send traffic to a RUNNING instance
// of this cell, the row of the index with the given presence (ORDINARY,
// EVACUATING, ...), without changing its state: a rep marks an instance
// unroutable before it stops it. netInfo is where the instance listens, as
// when it started.
func (c *CellClient) SetRoutable(ctx context.Context, instance Instance, presence models.ActualLRP_Presence, netInfo *models.NetInfo, routable bool) (*models.ActualLRP, error) {
	req := &models.StartActualLRPRequest{
		ProcessGuid: instance.ProcessGuid, Index: instance.Index,
		InstanceGuid: instance.InstanceGuid, CellId: c.cellID,
		NetInfo: netInfo, Routable: &routable, Presence: presence,
	}
	return c.lifecycle(ctx, models.RouteStartActualLRP, req)
}

// EvacuateActualLRP hands an instance of this (draining) cell over to a
// replacement elsewhere. keepRunning true: the board keeps it as an
// EVACUATING row, still routable, while the replacement starts; keep it
// running, report it with presence EVACUATING, and stop it (unroutable
// first, see SetRoutable, then RemoveActualLRP with presence EVACUATING)
// once a bulk report lists it in Stop. An evacuating instance that dies
// meanwhile is not crashed (crash acts on ORDINARY rows): remove its
// EVACUATING row. keepRunning false: nothing of it needs to run any more
// (it was only claimed, or is no longer this instance's): stop it.
// ResourceConflict means an earlier evacuation of the same index is still
// under way (its EVACUATING row is another instance's): keep running and
// ask again later.
func (c *CellClient) EvacuateActualLRP(ctx context.Context, instance Instance) (keepRunning bool, err error) {
	req := &models.EvacuateActualLRPRequest{
		ProcessGuid: instance.ProcessGuid, Index: instance.Index,
		InstanceGuid: instance.InstanceGuid, CellId: c.cellID,
	}
	var resp models.EvacuateActualLRPResponse
	if err := c.call(ctx, models.RouteEvacuateActualLRP, req, &resp, safeToRepeat); err != nil {
		return false, err
	}
	return resp.GetKeepRunning(), nil
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

// ReportOccupancy tells the board what instances of this cell now say of
// themselves (occupied or ready), 1 to models.MaxOccupancyChanges changes
// per call, and returns how many rows that changed. A change whose row is
// not RUNNING as its instance on this cell is ignored by the board. Each
// change sets a value rather than toggling one, so a repeat after a
// transport failure changes nothing more: it is retried like a bulk
// report.
func (c *CellClient) ReportOccupancy(ctx context.Context, changes []*models.OccupancyChange) (int, error) {
	var resp models.ReportOccupancyResponse
	req := &models.ReportOccupancyRequest{CellId: c.cellID, Changes: changes}
	if err := c.call(ctx, models.RouteReportOccupancy, req, &resp, safeToRepeat); err != nil {
		return 0, err
	}
	return int(resp.GetApplied()), nil
}

// ReportHealth sends what this cell saw of its instances' health checks
// and memory since its previous health report, 1 to
// models.MaxHealthEntries entries. The board adds each report to its
// signals, so a repeat would count it twice: the client sends it once and
// never repeats it (the rep's agent keeps a failed report's counts for
// its next one).
func (c *CellClient) ReportHealth(ctx context.Context, health []*models.DefinitionHealth) error {
	req := &models.ReportHealthRequest{CellId: c.cellID, Health: health}
	return c.call(ctx, models.RouteReportHealth, req, &models.ReportHealthResponse{}, sendOnce)
}

func (c *CellClient) lifecycle(ctx context.Context, route string, req proto.Message) (*models.ActualLRP, error) {
	var resp models.ActualLRPLifecycleResponse
	if err := c.call(ctx, route, req, &resp, sendOnce); err != nil {
		return nil, err
	}
	return required(route, resp.GetActualLrp())
}
