package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

var actualLRPTable = table[*models.ActualLRP]{
	headers: []string{"PROCESS_GUID", "INDEX", "PRESENCE", "STATE", "DEFINITION_ID", "CELL_ID", "ADDRESS", "ROUTABLE", "CRASHES", "SINCE"},
	row: func(lrp *models.ActualLRP) []string {
		return []string{
			lrp.GetProcessGuid(), itoa(lrp.GetIndex()), lrp.GetPresence().String(), lrp.GetState().String(),
			lrp.GetDefinitionId(), lrp.GetCellId(), address(lrp.GetNetInfo()), yesNo(lrp.GetRoutable()),
			itoa(lrp.GetCrashCount()), timestamp(lrp.GetSince()),
		}
	},
}

// address shows where an instance listens, e.g. 10.0.0.5:61001->8080.
func address(n *models.NetInfo) string {
	if n.GetAddress() == "" {
		return ""
	}
	if len(n.GetPorts()) == 0 {
		return n.GetAddress()
	}
	var mappings []string
	for _, p := range n.GetPorts() {
		mappings = append(mappings, fmt.Sprintf("%s:%d->%d", n.GetAddress(), p.GetHostPort(), p.GetContainerPort()))
	}
	return strings.Join(mappings, ",")
}

func (a *app) actualLRPsCommand() *cobra.Command {
	var filter client.ActualLRPFilter
	var index int32
	cmd := &cobra.Command{
		Use:   "actual-lrps [--domain D] [--cell C] [--guid G] [--index I]",
		Short: "List instances (actual LRPs)",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("index") {
				if index < 0 {
					return usageErrorf("--index must not be negative")
				}
				filter.Index = &index
			}
			lrps, err := a.client().ActualLRPs(ctx, filter)
			if err != nil {
				return err
			}
			return emit(a, lrps, actualLRPTable)
		}),
	}
	flags := cmd.Flags()
	flags.StringVar(&filter.Domain, "domain", "", "only instances in this domain")
	flags.StringVar(&filter.CellID, "cell", "", "only instances on this cell")
	flags.StringVar(&filter.ProcessGuid, "guid", "", "only instances of this process guid")
	flags.Int32Var(&index, "index", 0, "only instances with this index")
	return cmd
}
