package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// maxLogLines matches the rep's limit (rep.MaxLogLines); cork checks it
// first so that a typo is a usage error, not a round trip.
const maxLogLines = 10000

// endedAtHeader is the rep's header (rep.HeaderEndedAt) on the log of an
// instance that has ended: when it ended.
const endedAtHeader = "X-Corkboard-Ended-At"

func (a *app) logsCommand() *cobra.Command {
	var lines int
	cmd := &cobra.Command{
		Use:   "logs GUID/INDEX [-n LINES]",
		Short: "Print the end of an instance's log (its stdout and stderr), fetched from its cell's rep",
		Long: `Print the last lines of the log of the ORDINARY instance at GUID/INDEX: its
stdout and stderr in the order written, and lines from the rep marked "[rep ...]"
(started, stopped, why it crashed). cork finds the instance's cell on the board
and asks that cell's rep (the rep URL of 'cork cells'); -o does not apply.

A crashed instance's row names no cell. cork then asks every cell's rep for the
log it keeps of the last instance of GUID/INDEX that ended there, and prints the
latest one; its first line says which instance it was and how it ended.`,
		Args: exactArgs("GUID/INDEX"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			guid, index, err := parseInstanceRef(args[0])
			if err != nil {
				return err
			}
			if lines < 1 || lines > maxLogLines {
				return usageErrorf("-n must be from 1 to %d, got %d", maxLogLines, lines)
			}
			return a.printLogs(ctx, guid, index, lines)
		}),
	}
	cmd.Flags().IntVarP(&lines, "lines", "n", 100, "how many lines from the end")
	return cmd
}

// parseInstanceRef reads GUID/INDEX.
func parseInstanceRef(ref string) (string, int32, error) {
	slash := strings.LastIndex(ref, "/")
	if slash <= 0 {
		return "", 0, usageErrorf("want GUID/INDEX, e.g. hello/0, got %q", ref)
	}
	index, err := strconv.ParseInt(ref[slash+1:], 10, 32)
	if err != nil || index < 0 {
		return "", 0, usageErrorf("want GUID/INDEX with an index of 0 or more, e.g. hello/0, got %q", ref)
	}
	return ref[:slash], int32(index), nil
}

func (a *app) printLogs(ctx context.Context, guid string, index int32, lines int) error {
	board := a.client()
	lrps, err := board.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: guid, Index: &index})
	if err != nil {
		return err
	}
	var lrp *models.ActualLRP
	for _, candidate := range lrps {
		if candidate.GetPresence() == models.ActualLRP_ORDINARY {
			lrp = candidate
		}
	}
	ref := fmt.Sprintf("%s/%d", guid, index)
	if lrp == nil {
		return fmt.Errorf("%s: no such instance on the board", ref)
	}
	cells, err := board.Cells(ctx)
	if err != nil {
		return err
	}
	if a.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	if lrp.GetInstanceGuid() == "" || lrp.GetCellId() == "" {
		return a.printKeptLog(ctx, cells, lrp, lines)
	}

	repURL := ""
	for _, cell := range cells {
		if cell.GetCellId() == lrp.GetCellId() {
			repURL = cell.GetRepUrl()
		}
	}
	if repURL == "" {
		return fmt.Errorf("%s runs on cell %s, which the board has no rep URL for", ref, lrp.GetCellId())
	}
	query := url.Values{"instance_guid": {lrp.GetInstanceGuid()}, "lines": {strconv.Itoa(lines)}}
	answer := fetchLog(ctx, a.repHTTPClient(lrp.GetCellId()), lrp.GetCellId(), repURL, query)
	if answer.err != nil {
		return fmt.Errorf("%s: %w", ref, answer.err)
	}
	_, err = rawWriter{a}.Write(answer.body)
	return err
}

// repAskers bounds how many reps printKeptLog asks at once.
const repAskers = 8

// printKeptLog prints the log a rep keeps of the last instance of the
// row's index that ran on its cell, for a row that names no cell: a
// crashed row drops its cell, and a restarted one is not claimed yet.
// Every cell's rep is asked; an instance running there wins, otherwise
// the one that ended last.
func (a *app) printKeptLog(ctx context.Context, cells []*models.Cell, lrp *models.ActualLRP, lines int) error {
	ref := fmt.Sprintf("%s/%d", lrp.GetProcessGuid(), lrp.GetIndex())
	query := url.Values{
		"process_guid": {lrp.GetProcessGuid()},
		"index":        {strconv.Itoa(int(lrp.GetIndex()))},
		"lines":        {strconv.Itoa(lines)},
	}
	answers := make([]logAnswer, len(cells))
	var wg sync.WaitGroup
	slots := make(chan struct{}, repAskers)
	for i, cell := range cells {
		if cell.GetRepUrl() == "" {
			answers[i] = logAnswer{status: http.StatusNotFound}
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			answers[i] = fetchLog(ctx, a.repHTTPClient(cell.GetCellId()), cell.GetCellId(), cell.GetRepUrl(), query)
		})
	}
	wg.Wait()

	var best *logAnswer
	var unreachable []string
	for i := range answers {
		answer := &answers[i]
		switch {
		case answer.err == nil:
			if best == nil || answer.newerThan(best) {
				best = answer
			}
		case answer.status != http.StatusNotFound:
			unreachable = append(unreachable, answer.err.Error())
		}
	}
	if best != nil {
		_, err := rawWriter{a}.Write(best.body)
		return err
	}
	var problem string
	if lrp.GetState() == models.ActualLRP_CRASHED {
		problem = fmt.Sprintf("%s is CRASHED (%s) and no cell keeps a log of it", ref, lrp.GetCrashReason())
	} else {
		problem = fmt.Sprintf("%s is %s and not claimed by any cell yet: it has no log", ref, lrp.GetState())
	}
	if len(unreachable) > 0 {
		problem += "; not every cell could be asked: " + strings.Join(unreachable, "; ")
	}
	return errors.New(problem)
}

// logAnswer is one rep's answer to a log request.
type logAnswer struct {
	body []byte
	// endedAt is zero for a running instance's log.
	endedAt time.Time
	status  int
	err     error
}

// newerThan reports whether a's log is of a later instance than other's:
// a running one is later than any that ended.
func (a *logAnswer) newerThan(other *logAnswer) bool {
	switch {
	case a.endedAt.IsZero():
		return !other.endedAt.IsZero()
	case other.endedAt.IsZero():
		return false
	default:
		return a.endedAt.After(other.endedAt)
	}
}

// fetchLog asks the rep of cellID for a log through httpClient; its error
// says which rep and what went wrong.
func fetchLog(ctx context.Context, httpClient *http.Client, cellID, repURL string, query url.Values) logAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(repURL, "/")+"/v1/logs?"+query.Encode(), nil)
	if err != nil {
		return logAnswer{err: err}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return logAnswer{err: fmt.Errorf("asking the rep of cell %s: %w", cellID, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return logAnswer{
			status: resp.StatusCode,
			err:    fmt.Errorf("the rep of cell %s answered %s: %s", cellID, resp.Status, strings.TrimSpace(string(body))),
		}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return logAnswer{err: fmt.Errorf("reading the log from the rep of cell %s: %w", cellID, err)}
	}
	answer := logAnswer{body: body, status: resp.StatusCode}
	if raw := resp.Header.Get(endedAtHeader); raw != "" {
		// A rep that says an instance ended without a readable time still
		// ended it: the oldest possible time keeps it behind the others.
		answer.endedAt, err = time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			answer.endedAt = time.Unix(0, 1)
		}
	}
	return answer
}
