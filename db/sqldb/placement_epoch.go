package sqldb

import (
	"context"
	"database/sql"
	"errors"
)

// The placement epoch (table placement_epoch, one row) counts the applied
// transactions that gave rows a cell. Only convergence places, so a plan
// whose snapshot read epoch e knows every placement before it; while the
// epoch is still e, the free capacity it counted can only have grown
// (rows stopped, crashed or moved away), never shrunk. See
// convergence.ConvergenceWrites.PlacementEpoch.

// readPlacementEpoch reads the epoch, before the snapshot's rows.
func (s *SQLDB) readPlacementEpoch(ctx context.Context) (int64, error) {
	var epoch int64
	err := s.queryRow(ctx, s.conn, "SELECT epoch FROM placement_epoch WHERE id = 1").Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errInvalidRecord("placement_epoch has no row: the database was not migrated by this version")
	}
	return epoch, err
}

// placementGuard holds the epoch one ApplyConvergence call expects.
type placementGuard struct {
	// expected is the epoch the next placing transaction must find; 0
	// checks nothing.
	expected int64
	// stale: another writer placed since the snapshot; nothing of this
	// plan places any more.
	stale bool
}

// claim locks the epoch row in tx and reports whether the transaction may
// place: the epoch is the one expected. It then moves the epoch on; the
// caller calls committed once tx has committed.
func (g *placementGuard) claim(ctx context.Context, s *SQLDB, tx *sql.Tx) (bool, error) {
	if g.expected == 0 {
		return true, nil
	}
	if g.stale {
		return false, nil
	}
	var epoch int64
	err := s.queryRow(ctx, tx, "SELECT epoch FROM placement_epoch WHERE id = 1"+s.driver.lockForUpdate()).Scan(&epoch)
	if err != nil {
		return false, err
	}
	if epoch != g.expected {
		return false, nil
	}
	_, err = s.exec(ctx, tx, "UPDATE placement_epoch SET epoch = epoch + 1 WHERE id = 1")
	return err == nil, err
}

// settle records the outcome of a committed transaction that asked
// claim: placed (the epoch moved on by one) or refused (stale).
func (g *placementGuard) settle(placed bool) {
	switch {
	case g.expected == 0:
	case placed:
		g.expected++
	default:
		g.stale = true
	}
}
