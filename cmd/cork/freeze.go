package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

// freezeCommand groups the freeze windows: list, add, remove.
func (a *app) freezeCommand() *cobra.Command {
	freeze := &cobra.Command{
		Use:   "freeze",
		Short: "Freeze windows: when no rollout starts or progresses but reverts and overrides (list, add, remove)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("freeze wants a subcommand: list, add or remove")
		},
	}
	freeze.AddCommand(a.freezeListCommand(), a.freezeAddCommand(), a.freezeRemoveCommand())
	return freeze
}

// freezeRow is one line of cork freeze list: a window, and whether it is
// active at the board's time and until when.
func freezeRow(w *models.FreezeWindow, active string, until int64) []string {
	when, length, zone := w.GetFrom()+" to "+w.GetUntil(), "", ""
	if w.GetSchedule() != "" {
		when, length, zone = w.GetSchedule(), shortDuration(models.Millis(w.GetDurationMs())), w.GetTimeZone()
		if zone == "" {
			zone = "UTC"
		}
	}
	state := "no"
	if w.GetName() == active {
		state = "until " + timestamp(until)
	}
	return []string{w.GetName(), when, length, zone, state}
}

func (a *app) freezeListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the freeze windows and which one is active now",
		Long: `List the freeze windows in name order. -o json prints one object: the
windows, the name of the one active at the board's time ("active") and when
its current occurrence ends ("active_until", Unix nanoseconds).`,
		Args: exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			resp, err := a.client().FreezeWindows(ctx)
			if err != nil {
				return err
			}
			if a.format != formatTable {
				return printJSONLines(a.out, []*models.FreezeWindowsResponse{resp})
			}
			rows := make([][]string, 0, len(resp.GetWindows()))
			for _, w := range resp.GetWindows() {
				rows = append(rows, freezeRow(w, resp.GetActive(), resp.GetActiveUntil()))
			}
			return printTable(a.out, []string{"NAME", "WHEN", "DURATION", "TIME ZONE", "ACTIVE"}, rows)
		}),
	}
}

func (a *app) freezeAddCommand() *cobra.Command {
	var (
		schedule, zone, from, until string
		duration                    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "add NAME (--schedule CRON --duration D [--time-zone TZ] | --from RFC3339 --until RFC3339)",
		Short: "Add a freeze window (operators only)",
		Long: `Add a freeze window. While it is active no rollout starts or progresses,
except reverts (an auto-revert, 'cork rollback', 'cork rollout abort') and
updates made with 'cork update --override-freeze --reason TEXT'.

A recurring window: --schedule "minute hour day-of-month month day-of-week"
(*, lists 1,2, ranges 1-5, steps */15; day-of-week 0-7, 0 and 7 are Sunday),
each occurrence lasting --duration (at most 168h), on the wall clock of
--time-zone (an IANA name, default UTC). On a daylight saving day an
occurrence starts at the first instant the clock reads its time or later.
Example: --schedule "0 18 * * 5" --duration 60h --time-zone Europe/Berlin
(Friday 18:00 to Monday 06:00).

A one-off window: --from and --until, RFC 3339 times, e.g.
--from 2026-12-24T00:00:00+01:00 --until 2026-12-27T08:00:00+01:00.

Prints the window as stored.`,
		Args: exactArgs("NAME"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			recurring := anyChanged(flags, []string{"schedule", "duration", "time-zone"})
			oneOff := anyChanged(flags, []string{"from", "until"})
			switch {
			case recurring && oneOff:
				return usageErrorf("a window is recurring (--schedule, --duration, --time-zone) or one-off (--from, --until), not both")
			case !recurring && !oneOff:
				return usageErrorf("add needs --schedule and --duration, or --from and --until")
			case recurring && (!flags.Changed("schedule") || !flags.Changed("duration")):
				return usageErrorf("a recurring window needs both --schedule and --duration")
			case oneOff && (!flags.Changed("from") || !flags.Changed("until")):
				return usageErrorf("a one-off window needs both --from and --until")
			}
			w := &models.FreezeWindow{Name: args[0], Schedule: schedule, TimeZone: zone, From: from, Until: until}
			if recurring {
				if duration <= 0 || duration%time.Millisecond != 0 {
					return usageErrorf("--duration must be a positive whole number of milliseconds, got %s", duration)
				}
				w.DurationMs = duration.Milliseconds()
			}
			added, err := a.client().AddFreezeWindow(ctx, w)
			if err != nil {
				return err
			}
			if a.format == formatTable {
				return printTable(a.out, []string{"NAME", "WHEN", "DURATION", "TIME ZONE"},
					[][]string{freezeRow(added, "", 0)[:4]})
			}
			return printJSONLines(a.out, []*models.FreezeWindow{added})
		}),
	}
	flags := cmd.Flags()
	flags.StringVar(&schedule, "schedule", "", `recurring: when each occurrence starts, "minute hour day-of-month month day-of-week", e.g. "0 18 * * 5"`)
	flags.DurationVar(&duration, "duration", 0, "recurring: how long each occurrence lasts, e.g. 60h (at most 168h)")
	flags.StringVar(&zone, "time-zone", "", "recurring: the IANA time zone of the schedule, e.g. Europe/Berlin (default UTC)")
	flags.StringVar(&from, "from", "", "one-off: when the window starts, RFC 3339")
	flags.StringVar(&until, "until", "", "one-off: when the window ends, RFC 3339")
	return cmd
}

func (a *app) freezeRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a freeze window (operators only; prints nothing on success)",
		Args:  exactArgs("NAME"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return a.client().RemoveFreezeWindow(ctx, args[0])
		}),
	}
}
