package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// maxLogLines matches the rep's limit (rep.MaxLogLines); cork checks it
// first so that a typo is a usage error, not a round trip.
const maxLogLines = 10000

func (a *app) logsCommand() *cobra.Command {
	var lines int
	cmd := &cobra.Command{
		Use:   "logs GUID/INDEX [-n LINES]",
		Short: "Print the end of an instance's log (its stdout and stderr), fetched from its cell's rep",
		Long: `Print the last lines of the log of the ORDINARY instance at GUID/INDEX: its
stdout and stderr in the order written, and lines from the rep marked "[rep ...]"
(started, stopped, why it crashed). cork finds the instance's cell on the board
and asks that cell's rep (the rep URL of 'cork cells'); -o does not apply.`,
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
	switch {
	case lrp == nil:
		return fmt.Errorf("%s: no such instance on the board", ref)
	case lrp.GetInstanceGuid() == "" || lrp.GetCellId() == "":
		return fmt.Errorf("%s is %s and not claimed by any cell yet: it has no log", ref, lrp.GetState())
	}

	cells, err := board.Cells(ctx)
	if err != nil {
		return err
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
	if a.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(repURL, "/")+"/v1/logs?"+query.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: asking the rep of cell %s: %w", ref, lrp.GetCellId(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: the rep of cell %s answered %s: %s", ref, lrp.GetCellId(), resp.Status, strings.TrimSpace(string(body)))
	}
	_, err = io.Copy(a.out, resp.Body)
	return err
}
