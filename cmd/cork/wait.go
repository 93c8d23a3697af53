package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// waitPoll is how often cork wait asks the board.
const waitPoll = 500 * time.Millisecond

func (a *app) waitCommand() *cobra.Command {
	var within time.Duration
	cmd := &cobra.Command{
		Use:   "wait GUID [--within 2m]",
		Short: "Wait until every instance of an LRP runs its active definition",
		Long: `Wait until every instance of an LRP runs its active definition, and nothing
else is left: each index from 0 to instances-1 has one instance, RUNNING and
routable, on the active definition, on a cell that is not draining, and no
RETIRING, EVACUATING or SUSPECT instance and no instance past the count remains
(models.Settled). The draining cells come from 'cork cells'; a certificate that
may not list cells (an api-client's) waits without them. It asks the
board every 500ms, prints "GUID: N instances running DEFINITION" when they are,
and exits 0. After --within it exits 1, saying what was still in the way
("index 2 is UNCLAIMED"). A rollout's end is 'rollout status --watch'; this is
for a desire, a scale, a crash or a drain, as in a script or the docs' sessions.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if within <= 0 {
				return usageErrorf("--within must be positive")
			}
			guid := args[0]
			ctx, cancel := context.WithTimeout(ctx, within)
			defer cancel()
			c := a.client()
			why := "nothing read yet"
			for {
				desired, err := c.DesiredLRPByProcessGuid(ctx, guid)
				if err == nil {
					var lrps []*models.ActualLRP
					lrps, err = c.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: guid})
					if err == nil {
						settled, reason := models.Settled(desired.GetInstances(), desired.GetActiveDefinitionId(), lrps, a.drainingCells(ctx, c))
						if settled {
							_, err := fmt.Fprintf(a.out, "%s: %d instances running %s\n", guid, desired.GetInstances(), desired.GetActiveDefinitionId())
							return err
						}
						why = reason
					}
				}
				if err != nil && ctx.Err() == nil {
					// An answer of the board (no such LRP), or an HTTP
					// answer that asking again will not change (a 4xx: a
					// board with TLS asked in plain HTTP, a wrong URL),
					// ends the wait; a board that does not answer, or a
					// proxy's 5xx while it restarts, is waited for.
					var e *models.Error
					var status *client.HTTPStatusError
					if errors.As(err, &e) || errors.As(err, &status) && status.StatusCode >= 400 && status.StatusCode < 500 {
						return err
					}
					why = err.Error()
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("%s: not settled within %s: %s", guid, within, why)
				case <-time.After(waitPoll):
				}
			}
		}),
	}
	cmd.Flags().DurationVar(&within, "within", 2*time.Minute, "how long to wait before giving up (exit 1)")
	return cmd
}

// drainingCells are the cells marked draining, or none when the board does
// not list cells to this caller.
func (a *app) drainingCells(ctx context.Context, c *client.Client) map[string]bool {
	cells, err := c.Cells(ctx)
	if err != nil {
		return nil
	}
	draining := map[string]bool{}
	for _, cell := range cells {
		if cell.GetDraining() {
			draining[cell.GetCellId()] = true
		}
	}
	return draining
}
