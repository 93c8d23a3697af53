package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// desiredLRPTable shows the update strategy as the board applies it
// (effectiveStrategy); the JSON output has it as stored, where an empty or
// 0 field means the default.
var desiredLRPTable = table[*models.DesiredLRP]{
	headers: []string{"PROCESS_GUID", "DOMAIN", "INSTANCES", "ACTIVE_DEFINITION", "HEALTHY_DEFINITION", "MEMORY_MB", "DISK_MB", "STRATEGY"},
	row: func(lrp *models.DesiredLRP) []string {
		return []string{
			lrp.GetProcessGuid(), lrp.GetDomain(), itoa(lrp.GetInstances()),
			lrp.GetActiveDefinitionId(), lrp.GetHealthyDefinitionId(),
			itoa(lrp.GetDefinition().GetMemoryMb()), itoa(lrp.GetDefinition().GetDiskMb()),
			effectiveStrategy(lrp.GetInstances(), lrp.GetUpdateStrategy()),
		}
	},
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
		}
	},
}

func (a *app) desireCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "desire FILE",
		Short: "Desire an LRP from a JSON spec (a DesiredLRP; '-' reads stdin)",
		Args:  exactArgs("FILE"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			var lrp models.DesiredLRP
			if err := a.readSpec(args[0], &lrp); err != nil {
				return err
			}
			if err := lrp.Validate(); err != nil {
				return invalidSpec(args[0], err)
			}
			stored, operationID, err := a.client().DesireLRPWithOperation(ctx, &lrp)
			if err != nil {
				return err
			}
			if err := emit(a, []*models.DesiredLRP{stored}, desiredLRPTable); err != nil {
				return err
			}
			a.printOperationID(operationID)
			return nil
		}),
	}
}

func (a *app) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get GUID",
		Short: "Show a desired LRP with its active definition",
		Args:  exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			lrp, err := a.client().DesiredLRPByProcessGuid(ctx, args[0])
			if err != nil {
				return err
			}
			return emit(a, []*models.DesiredLRP{lrp}, desiredLRPTable)
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
