package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// desiredLRPTable shows the update strategy as the board applies it
// (effectiveStrategy); the JSON output has it as stored, where an empty or
// 0 field means the default. AUTOSCALE is min-max@ready_target while
// autoscaling is enabled (see autoscaleCell).
var desiredLRPTable = table[*models.DesiredLRP]{
	headers: []string{"PROCESS_GUID", "DOMAIN", "INSTANCES", "ACTIVE_DEFINITION", "HEALTHY_DEFINITION", "MEMORY_MB", "DISK_MB", "AUTOSCALE", "STRATEGY"},
	row: func(lrp *models.DesiredLRP) []string {
		return []string{
			lrp.GetProcessGuid(), lrp.GetDomain(), itoa(lrp.GetInstances()),
			lrp.GetActiveDefinitionId(), lrp.GetHealthyDefinitionId(),
			itoa(lrp.GetDefinition().GetMemoryMb()), itoa(lrp.GetDefinition().GetDiskMb()),
			autoscaleCell(lrp.GetAutoscaling()),
			effectiveStrategy(lrp.GetInstances(), lrp.GetUpdateStrategy()),
		}
	},
}

// emitDesiredLRP prints one LRP: a JSON line, or its table row followed by
// its autoscaling settings and the autoscaler's last decision.
func (a *app) emitDesiredLRP(lrp *models.DesiredLRP) error {
	if err := emit(a, []*models.DesiredLRP{lrp}, desiredLRPTable); err != nil {
		return err
	}
	if a.format == formatTable {
		a.printAutoscaling(lrp)
	}
	return nil
}

// schedulingInfoTable is desiredLRPTable without the strategy, which a
// scheduling info does not carry.
var schedulingInfoTable = table[*models.DesiredLRPSchedulingInfo]{
	headers: desiredLRPTable.headers[:len(desiredLRPTable.headers)-1],
	row: func(info *models.DesiredLRPSchedulingInfo) []string {
		return []string{
			info.GetProcessGuid(), info.GetDomain(), itoa(info.GetInstances()),
			info.GetActiveDefinitionId(), info.GetHealthyDefinitionId(),
			itoa(info.GetMemoryMb()), itoa(info.GetDiskMb()),
			autoscaleCell(info.GetAutoscaling()),
		}
	},
}

func (a *app) desireCommand() *cobra.Command {
	var autoscaling autoscalingFlags
	cmd := &cobra.Command{
		Use:   "desire FILE [--autoscaling FILE]",
		Short: "Desire an LRP from a JSON spec (a DesiredLRP; '-' reads stdin)",
		Long: `Desire an LRP from a JSON spec (a DesiredLRP; '-' reads stdin).

Autoscaling settings come in the spec's "autoscaling" object or, replacing
it, from --autoscaling FILE (the same object on its own). With autoscaling
enabled the board sets instances from the instances' occupancy, within
[min, max].`,
		Args: exactArgs("FILE"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if args[0] == "-" && autoscaling.file == "-" {
				return usageErrorf("only one of FILE and --autoscaling can be '-' (stdin)")
			}
			var lrp models.DesiredLRP
			if err := a.readSpec(args[0], &lrp); err != nil {
				return err
			}
			settings, err := a.autoscalingSettings(cmd.Flags(), &autoscaling)
			if err != nil {
				return err
			}
			if settings != nil {
				lrp.Autoscaling = settings
			}
			if err := lrp.Validate(); err != nil {
				return invalidSpec(args[0], err)
			}
			stored, operationID, err := a.client().DesireLRPWithOperation(ctx, &lrp)
			if err != nil {
				return err
			}
			if err := a.emitDesiredLRP(stored); err != nil {
				return err
			}
			a.printOperationID(operationID)
			return nil
		}),
	}
	autoscaling.registerFile(cmd.Flags())
	return cmd
}

func (a *app) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get GUID",
		Short: "Show a desired LRP with its active definition",
		Long: `Show a desired LRP with its active definition.

With -o table the row is followed, when the LRP has them, by its
autoscaling settings ("autoscaling: enabled, min 2, max 10, policy
roomOccupancy, ready_target 0.5, scale-down window 2m0s") and the
autoscaler's last decision, its arithmetic and when it was made
("autoscaler: occupied 4, ready_target 0.5: ceil(4 / (1 − 0.5)) = 8, within
[2, 10]: wanted 8; instances 2 → 8 (at …)"). The JSON output carries both
as "autoscaling" and "autoscaler".`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			lrp, err := a.client().DesiredLRPByProcessGuid(ctx, args[0])
			if err != nil {
				return err
			}
			return a.emitDesiredLRP(lrp)
		}),
	}
}

func (a *app) listCommand() *cobra.Command {
	var domain string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List desired LRPs",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			lrps, err := a.client().DesiredLRPs(ctx, client.DesiredLRPFilter{Domain: domain})
			if err != nil {
				return err
			}
			return emit(a, lrps, desiredLRPTable)
		}),
	}
	cmd.Flags().StringVar(&domain, "domain", "", "only LRPs in this domain")
	return cmd
}

func (a *app) schedulingInfosCommand() *cobra.Command {
	var domain string
	cmd := &cobra.Command{
		Use:   "scheduling-infos",
		Short: "List desired LRPs without their run definitions",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			infos, err := a.client().DesiredLRPSchedulingInfos(ctx, client.DesiredLRPFilter{Domain: domain})
			if err != nil {
				return err
			}
			return emit(a, infos, schedulingInfoTable)
		}),
	}
	cmd.Flags().StringVar(&domain, "domain", "", "only LRPs in this domain")
	return cmd
}

func (a *app) removeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove GUID",
		Short: "Remove a desired LRP (prints nothing on success; -o table: the operation id)",
		Args:  exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			operationID, err := a.client().RemoveDesiredLRPWithOperation(ctx, args[0])
			if err != nil {
				return err
			}
			a.printOperationID(operationID)
			return nil
		}),
	}
}
