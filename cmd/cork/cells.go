package main

import (
	"context"
	"strings"

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
		Short: "Act on one cell (drain, quarantine, clear)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("cell wants a subcommand: drain, quarantine or clear")
		},
	}
	cell.AddCommand(a.cellDrainCommand(), a.cellQuarantineCommand(), a.cellClearCommand())
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
	return &cobra.Command{
		Use:   "drain CELL",
		Short: "Drain a cell: place nothing new on it; its rep moves every instance elsewhere, start-before-stop (prints nothing on success)",
		Args:  exactArgs("CELL"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return a.client().DrainCell(ctx, args[0])
		}),
	}
}
