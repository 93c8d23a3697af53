package handlers_test

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// fakeCellStore is a TEMPORARY stand-in for the cell side of the store
// (db.CellDB and db.ActualLRPLifecycleDB), used only until db/sqldb
// implements it; then the cell specs run against the real store and this
// file goes. It records each call and answers what the spec set, so the
// specs show what the handlers pass to the store and what they make of its
// answers. It checks no rules: those are the store's.
type fakeCellStore struct {
	mu    sync.Mutex
	calls []storeCall

	// Answers.
	lrp    *models.ActualLRP
	cells  []*models.Cell
	report *db.BulkReportResult
	err    error
}

// storeCall is one call as the store saw it; unused fields stay zero.
type storeCall struct {
	method    string
	key       db.ActualLRPKey
	caller    db.Caller
	cell      *models.Cell
	ttl       time.Duration
	netInfo   *models.NetInfo
	routable  bool
	reason    string
	cellID    string
	instances []*models.ReportedInstance
}

// storeWithFakeCells serves the rest of the API from a real store.
type storeWithFakeCells struct {
	db.DB
	*fakeCellStore
}

func (f *fakeCellStore) record(c storeCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeCellStore) recorded() []storeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]storeCall(nil), f.calls...)
}

func (f *fakeCellStore) answer() (*models.ActualLRP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return proto.Clone(f.lrp).(*models.ActualLRP), nil
}

func (f *fakeCellStore) RegisterCell(_ context.Context, cell *models.Cell, ttl time.Duration) error {
	f.record(storeCall{method: "RegisterCell", cell: cell, ttl: ttl})
	return f.err
}

func (f *fakeCellStore) Cells(context.Context) ([]*models.Cell, error) {
	f.record(storeCall{method: "Cells"})
	return f.cells, f.err
}

func (f *fakeCellStore) ClaimActualLRP(_ context.Context, key db.ActualLRPKey, caller db.Caller) (*models.ActualLRP, error) {
	f.record(storeCall{method: "ClaimActualLRP", key: key, caller: caller})
	return f.answer()
}

func (f *fakeCellStore) StartActualLRP(_ context.Context, key db.ActualLRPKey, caller db.Caller, netInfo *models.NetInfo, routable bool) (*models.ActualLRP, error) {
	f.record(storeCall{method: "StartActualLRP", key: key, caller: caller, netInfo: netInfo, routable: routable})
	return f.answer()
}

func (f *fakeCellStore) CrashActualLRP(_ context.Context, key db.ActualLRPKey, caller db.Caller, reason string) (*models.ActualLRP, error) {
	f.record(storeCall{method: "CrashActualLRP", key: key, caller: caller, reason: reason})
	return f.answer()
}

func (f *fakeCellStore) FailActualLRP(_ context.Context, key db.ActualLRPKey, cellID, placementError string) (*models.ActualLRP, error) {
	f.record(storeCall{method: "FailActualLRP", key: key, cellID: cellID, reason: placementError})
	return f.answer()
}

func (f *fakeCellStore) RemoveActualLRP(_ context.Context, key db.ActualLRPKey, caller db.Caller) error {
	f.record(storeCall{method: "RemoveActualLRP", key: key, caller: caller})
	return f.err
}

func (f *fakeCellStore) BulkReport(_ context.Context, cellID string, instances []*models.ReportedInstance) (*db.BulkReportResult, error) {
	f.record(storeCall{method: "BulkReport", cellID: cellID, instances: instances})
	return f.report, f.err
}
