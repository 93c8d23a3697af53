package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

// budgetGroupCommand groups the budget groups: list, set, remove.
func (a *app) budgetGroupCommand() *cobra.Command {
	group := &cobra.Command{
		Use:   "budget-group",
		Short: "Budget groups: disruption budgets shared by the LRPs that name them (list, set, remove)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("budget-group wants a subcommand: list, set or remove")
		},
	}
	group.AddCommand(a.budgetGroupListCommand(), a.budgetGroupSetCommand(), a.budgetGroupRemoveCommand())
	return group
}

func budgetGroupRow(g *models.BudgetGroup) []string {
	return []string{g.GetName(), g.GetMaxUnavailable(), timestamp(g.GetUpdatedAt()), g.GetRequestedBy()}
}

var budgetGroupHeader = []string{"NAME", "MAX_UNAVAILABLE", "UPDATED", "BY"}

func (a *app) budgetGroupListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the budget groups",
		Long:  `List the budget groups in name order, one JSON object each (-o table: a table).`,
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			groups, err := a.client().BudgetGroups(ctx)
			if err != nil {
				return err
			}
			if a.format != formatTable {
				return printJSONLines(a.out, groups)
			}
			rows := make([][]string, 0, len(groups))
			for _, g := range groups {
				rows = append(rows, budgetGroupRow(g))
			}
			return printTable(a.out, budgetGroupHeader, rows)
		}),
	}
}

func (a *app) budgetGroupSetCommand() *cobra.Command {
	var maxUnavailable string
	cmd := &cobra.Command{
		Use:   "set NAME --max-unavailable N|P%",
		Short: "Set a budget group, new or replacing the one of that name (operators only)",
		Long: `Set a budget group: at most --max-unavailable of the wanted instances of all
the LRPs that name it (cork update --budget-group NAME, or
disruption_budget.group in a desire spec) may be down at once for voluntary
disruptions — rollouts, drains, moves — whatever each LRP's own budget
allows. A count ("2") or a percent of their instances together ("10%",
rounded down). Crashes and lost cells count against it but nothing holds
them. See docs/disruption-budget.md.

Prints the group as stored.`,
		Args: exactArgs("NAME"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("max-unavailable") {
				return usageErrorf("set needs --max-unavailable")
			}
			set, err := a.client().SetBudgetGroup(ctx, &models.BudgetGroup{Name: args[0], MaxUnavailable: maxUnavailable})
			if err != nil {
				return err
			}
			if a.format == formatTable {
				return printTable(a.out, budgetGroupHeader, [][]string{budgetGroupRow(set)})
			}
			return printJSONLines(a.out, []*models.BudgetGroup{set})
		}),
	}
	cmd.Flags().StringVar(&maxUnavailable, "max-unavailable", "", `indices of the group's LRPs together that may be down at once: a count or a percent`)
	return cmd
}

func (a *app) budgetGroupRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a budget group (operators only; prints nothing on success). The LRPs that name it keep their own budgets only",
		Args:  exactArgs("NAME"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return a.client().RemoveBudgetGroup(ctx, args[0])
		}),
	}
}
