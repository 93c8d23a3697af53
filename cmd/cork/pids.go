package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/corkboard/corkboard/models"
)

// printActualLRPsWide prints the actual LRP table with a PID column before
// REASON (which stays last, the one column of free text). The board
// stores no pids; each row's pid is what its cell's rep reports on GET
// /v1/instances, asked once per cell that a row names.
func (a *app) printActualLRPsWide(ctx context.Context, lrps []*models.ActualLRP) error {
	pids, err := a.pidsOf(ctx, lrps)
	if err != nil {
		return err
	}
	last := len(actualLRPTable.headers) - 1
	headers := slices.Concat(actualLRPTable.headers[:last], []string{"PID"}, actualLRPTable.headers[last:])
	rows := make([][]string, 0, len(lrps))
	for _, lrp := range lrps {
		row := actualLRPTable.row(lrp)
		pid := pidCell(lrp, pids)
		rows = append(rows, slices.Concat(row[:last], []string{pid}, row[last:]))
	}
	return printTable(a.out, headers, rows)
}

// printActualLRPPids prints the pid of each listed instance whose rep
// reports one, a line each (-o pid): what a script kills.
func (a *app) printActualLRPPids(ctx context.Context, lrps []*models.ActualLRP) error {
	pids, err := a.pidsOf(ctx, lrps)
	if err != nil {
		return err
	}
	for _, lrp := range lrps {
		if pid := pidCell(lrp, pids); pid != "" && pid != "?" {
			if _, err := fmt.Fprintln(a.out, pid); err != nil {
				return err
			}
		}
	}
	return nil
}

// pidsOf asks the rep of each cell the rows name for its instances' pids,
// once a cell, warning on stderr of a cell whose rep did not answer.
func (a *app) pidsOf(ctx context.Context, lrps []*models.ActualLRP) (map[string]cellPids, error) {
	var cellIDs []string
	for _, lrp := range lrps {
		if id := lrp.GetCellId(); id != "" && !slices.Contains(cellIDs, id) {
			cellIDs = append(cellIDs, id)
		}
	}
	var pids map[string]cellPids
	if len(cellIDs) > 0 {
		cells, err := a.client().Cells(ctx)
		if err != nil {
			return nil, fmt.Errorf("finding the reps that know the pids: %w", err)
		}
		pids = a.askPids(ctx, cells, cellIDs)
		for _, id := range cellIDs {
			if err := pids[id].err; err != nil {
				a.warn(fmt.Sprintf("no pids from cell %s: %v", id, err))
			}
		}
	}
	return pids, nil
}

// cellPids is what one cell's rep said: each instance guid's pid, or why
// it could not be asked.
type cellPids struct {
	byInstance map[string]int
	err        error
}

// pidCell is the PID column of one row: the pid its rep reports for the
// row's instance guid, "?" when the rep could not be asked, "" (shown as
// "-") when the row names no cell or the rep runs no such instance or has
// not started it.
func pidCell(lrp *models.ActualLRP, pids map[string]cellPids) string {
	if lrp.GetCellId() == "" || lrp.GetInstanceGuid() == "" {
		return ""
	}
	answer := pids[lrp.GetCellId()]
	if answer.err != nil {
		return "?"
	}
	if pid := answer.byInstance[lrp.GetInstanceGuid()]; pid > 0 {
		return strconv.Itoa(pid)
	}
	return ""
}

// askPids asks the rep of each cell in cellIDs for its instances' pids,
// at most repAskers at once, within --timeout.
func (a *app) askPids(ctx context.Context, cells []*models.Cell, cellIDs []string) map[string]cellPids {
	if a.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	repURLs := map[string]string{}
	for _, cell := range cells {
		repURLs[cell.GetCellId()] = cell.GetRepUrl()
	}
	var mu sync.Mutex
	answers := map[string]cellPids{}
	var wg sync.WaitGroup
	slots := make(chan struct{}, repAskers)
	for _, id := range cellIDs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			var answer cellPids
			if repURLs[id] == "" {
				answer.err = fmt.Errorf("the board has no rep URL for it (cell gone?)")
			} else {
				answer.byInstance, answer.err = fetchPids(ctx, a.repHTTPClient(id), repURLs[id])
			}
			mu.Lock()
			answers[id] = answer
			mu.Unlock()
		})
	}
	wg.Wait()
	return answers
}

// repInstance is the part of an entry of a rep's GET /v1/instances
// (rep.InstanceInfo) that cork reads.
type repInstance struct {
	InstanceGuid string `json:"instance_guid"`
	Pid          int    `json:"pid"`
}

// fetchPids reads a rep's GET /v1/instances into pids by instance guid.
func fetchPids(ctx context.Context, httpClient *http.Client, repURL string) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(repURL, "/")+"/v1/instances", nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking its rep: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("its rep answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var list []repInstance
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("reading its rep's instances: %w", err)
	}
	pids := make(map[string]int, len(list))
	for _, inst := range list {
		pids[inst.InstanceGuid] = inst.Pid
	}
	return pids, nil
}
