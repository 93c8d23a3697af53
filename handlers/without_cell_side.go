package handlers

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// WithoutCellSide is TEMPORARY, a bridge for the time db/sqldb does not
// implement db.CellDB and db.ActualLRPLifecycleDB yet: it returns store
// itself when it is a whole Store, and otherwise a Store whose cell routes
// answer Unavailable. Once db.DB embeds those interfaces this file no
// longer compiles (the cell methods become ambiguous) and goes, and callers
// pass their store straight to New.
func WithoutCellSide(store db.DB) Store {
	if whole, ok := store.(Store); ok {
		return whole
	}
	return withoutCellSide{DB: store}
}

type withoutCellSide struct {
	db.DB
	unstoredCells
}

// unstoredCells answers every cell-side call with Unavailable.
type unstoredCells struct{}

func errCellsNotStored() error {
	return models.NewError(models.Error_Unavailable, "cells: this board does not store cells yet")
}

func (unstoredCells) RegisterCell(context.Context, *models.Cell, time.Duration) error {
	return errCellsNotStored()
}

func (unstoredCells) Cells(context.Context) ([]*models.Cell, error) {
	return nil, errCellsNotStored()
}

func (unstoredCells) ClaimActualLRP(context.Context, db.ActualLRPKey, db.Caller) (*models.ActualLRP, error) {
	return nil, errCellsNotStored()
}

func (unstoredCells) StartActualLRP(context.Context, db.ActualLRPKey, db.Caller, *models.NetInfo, bool) (*models.ActualLRP, error) {
	return nil, errCellsNotStored()
}

func (unstoredCells) CrashActualLRP(context.Context, db.ActualLRPKey, db.Caller, string) (*models.ActualLRP, error) {
	return nil, errCellsNotStored()
}

func (unstoredCells) FailActualLRP(context.Context, db.ActualLRPKey, string, string) (*models.ActualLRP, error) {
	return nil, errCellsNotStored()
}

func (unstoredCells) RemoveActualLRP(context.Context, db.ActualLRPKey, db.Caller) error {
	return errCellsNotStored()
}

func (unstoredCells) BulkReport(context.Context, string, []*models.ReportedInstance) (*db.BulkReportResult, error) {
	return nil, errCellsNotStored()
}
