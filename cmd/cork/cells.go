package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

// cellTable puts what is free first: that is what placement goes by.
// ISOLATION is how the cell's rep runs instances: "full", "none" (as the
// rep's own user), or "-" from a rep that does not say. QUARANTINED says
// whether placement keeps off it until an operator clears it (cork cell
// clear); --json has who quarantined it and why.
var cellTable = table[*models.Cell]{
	headers: []string{"CELL_ID", "ZONE", "PRESENT", "DRAINING", "QUARANTINED", "ISOLATION", "FREE_MEMORY_MB", "FREE_DISK_MB", "FREE_INSTANCES", "MEMORY_MB", "DISK_MB", "INSTANCES", "TAGS", "EXPIRES"},
	row: func(c *models.Cell) []string {
		free, capacity := c.GetFree(), c.GetCapacity()
		return []string{
			c.GetCellId(), c.GetZone(), yesNo(c.GetPresent()), yesNo(c.GetDraining()), yesNo(c.GetQuarantinedAt() != 0), c.GetIsolation(),
			itoa(free.GetMemoryMb()), itoa(free.GetDiskMb()), itoa(free.GetInstances()),
			itoa(capacity.GetMemoryMb()), itoa(capacity.GetDiskMb()), itoa(capacity.GetInstances()),
			strings.Join(c.GetPlacementTags(), ","), timestamp(c.GetExpiresAt()),
		}
	},
}

func (a *app) cellsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cells",
		Short: "List the cells, present or expired, with their free capacity",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			cells, err := a.client().Cells(ctx)
			if err != nil {
				return err
			}
			return emit(a, cells, cellTable)
		}),
	}
}

// cellCommand groups what an operator does to one cell.
func (a *app) cellCommand() *cobra.Command {
	cell := &cobra.Command{
		Use:   "cell",
		Short: "Act on one cell (drain, drain-status, quarantine, clear)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("cell wants a subcommand: drain, drain-status, quarantine or clear")
		},
	}
	cell.AddCommand(a.cellDrainCommand(), a.cellDrainStatusCommand(), a.cellQuarantineCommand(), a.cellClearCommand())
	return cell
}

func (a *app) cellQuarantineCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "quarantine CELL --reason TEXT",
		Short: "Quarantine a cell: place nothing new on it until cork cell clear; its instances keep running (prints nothing on success)",
		Args:  exactArgs("CELL"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if reason == "" {
				return usageErrorf("quarantine wants --reason: say why, for whoever clears it")
			}
			return a.client().QuarantineCell(ctx, args[0], reason)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the cell is quarantined (required; kept on the cell)")
	return cmd
}

func (a *app) cellClearCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "clear CELL",
		Short: "Clear a cell's quarantine: placement may use it again; who and when are kept on the cell (prints nothing on success)",
		Args:  exactArgs("CELL"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return a.client().ClearCellQuarantine(ctx, args[0])
		}),
	}
}

func (a *app) cellDrainCommand() *cobra.Command {
	var deadline time.Duration
	cmd := &cobra.Command{
		Use:   "drain CELL [--deadline 10m]",
		Short: "Drain a cell: place nothing new on it; its rep moves every instance elsewhere, start-before-stop, within the LRPs' disruption budgets (prints nothing on success)",
		Long: `Drain a cell: placement puts nothing new on it, and its rep hands every
instance over to a replacement elsewhere, start-before-stop. A hand-over that
would take an LRP below its disruption budget waits until the budget allows it
('cork cell drain-status CELL' names each LRP that holds the drain and why).

--deadline D: from now plus D the drain's hand-overs go ahead whatever the
budgets, and the cell records the first that did. Without it the drain waits
for the budgets however long it takes (the rep's own evacuation timeout still
applies). Draining a cell that drains already sets a new deadline.`,
		Args: exactArgs("CELL"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if deadline < 0 {
				return usageErrorf("--deadline must not be negative, got %s", deadline)
			}
			return a.client().DrainCellBy(ctx, args[0], deadline)
		}),
	}
	cmd.Flags().DurationVar(&deadline, "deadline", 0, "from now plus this, evacuations go ahead whatever the disruption budgets (0: wait for them)")
	return cmd
}

// drainBlockedTable lists the LRPs whose disruption budget holds a drain.
var drainBlockedTable = table[*models.DrainBlockedLRP]{
	headers: []string{"PROCESS_GUID", "WAITING", "REASON", "SINCE", "ESTIMATE", "DETAIL"},
	row: func(b *models.DrainBlockedLRP) []string {
		by := b.GetBlockedBy()
		return []string{b.GetProcessGuid(), itoa(b.GetWaiting()), by.GetReason(), timestamp(by.GetSince()), timestamp(by.GetEstimate()), by.GetDetail()}
	},
}

func (a *app) cellDrainStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "drain-status CELL",
		Short: "Show how a cell's drain goes: what is left on it, and each LRP whose disruption budget holds it, with why and until when",
		Args:  exactArgs("CELL"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			status, err := a.client().DrainStatus(ctx, args[0])
			if err != nil {
				return err
			}
			if a.format != formatTable {
				return emit(a, []*models.DrainStatus{status}, table[*models.DrainStatus]{})
			}
			writeDrainStatus(a.out, status)
			return emit(a, status.GetBlocked(), drainBlockedTable)
		}),
	}
}

// writeDrainStatus writes the lines above the blocked LRPs' table.
func writeDrainStatus(w io.Writer, s *models.DrainStatus) {
	c := s.GetCell()
	drain := "not draining"
	if c.GetDraining() {
		drain = "draining since " + timestamp(c.GetDrainStartedAt())
		if c.GetDrainDeadline() != 0 {
			drain += ", deadline " + timestamp(c.GetDrainDeadline())
		} else {
			drain += ", no deadline"
		}
	}
	fmt.Fprintf(w, "Cell:      %s (%s)\n", c.GetCellId(), drain)
	fmt.Fprintf(w, "Left:      %d to hand over, %d evacuating\n", s.GetWaiting(), s.GetEvacuating())
	if at := c.GetDrainOverdueAt(); at != 0 {
		fmt.Fprintf(w, "Overdue:   since %s hand-overs go ahead past the deadline, over spent budgets\n", timestamp(at))
	}
}
