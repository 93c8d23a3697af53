package executor

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/corkboard/corkboard/models"
)

// downloadGate holds the cell's asset downloads to the board's
// max_asset_downloads_per_cell: a download enters before it fetches and
// leaves when it is done; models.DownloadsToBegin decides how many of the
// waiting ones begin, first in first out. The limit comes with every
// heartbeat answer (SetMaxAssetDownloads); 0 is no limit.
type downloadGate struct {
	mu      sync.Mutex
	limit   int32
	active  int32
	waiting []chan struct{}
}

// setLimit changes the limit and lets in whom it now admits.
func (g *downloadGate) setLimit(limit int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = limit
	g.admit()
}

// enter waits for the download's turn, writing a line into the start's log
// when it has to wait. It fails when ctx ends first; the download then
// holds no slot.
func (g *downloadGate) enter(ctx context.Context, note func(string)) error {
	g.mu.Lock()
	if len(g.waiting) == 0 && models.DownloadsToBegin(g.limit, g.active, 1) == 1 {
		g.active++
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	g.waiting = append(g.waiting, turn)
	line := fmt.Sprintf("waiting to download: %d downloads under way on this cell, %d before this one (max_asset_downloads_per_cell %d)",
		g.active, len(g.waiting)-1, g.limit)
	g.mu.Unlock()
	note(line)
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if i := slices.Index(g.waiting, turn); i >= 0 {
			g.waiting = slices.Delete(g.waiting, i, i+1)
		} else {
			// Let in as ctx ended: give the slot to the next.
			g.active--
			g.admit()
		}
		return context.Cause(ctx)
	}
}

// leave ends a download that entered, letting the next one in.
func (g *downloadGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	g.admit()
}

// admit lets in the waiting downloads the limit allows; g.mu is held.
func (g *downloadGate) admit() {
	n := models.DownloadsToBegin(g.limit, g.active, int32(len(g.waiting)))
	for _, turn := range g.waiting[:n] {
		close(turn)
	}
	g.waiting = g.waiting[n:]
	g.active += n
}

// status is the downloads under way and waiting, for tests.
func (g *downloadGate) status() (active, waiting int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.active, int32(len(g.waiting))
}
