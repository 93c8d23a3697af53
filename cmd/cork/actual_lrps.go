package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// actualLRPTable ends with REASON, the one column of free text, so that
// the columns before it split on whitespace.
var actualLRPTable = table[*models.ActualLRP]{
	headers: []string{"PROCESS_GUID", "INDEX", "PRESENCE", "STATE", "DEFINITION_ID", "CELL_ID", "ADDRESS", "ROUTES", "ROUTABLE", "OCCUPIED", "CRASHES", "SINCE", "REASON"},
	row: func(lrp *models.ActualLRP) []string {
		return []string{
			lrp.GetProcessGuid(), itoa(lrp.GetIndex()), lrp.GetPresence().String(), lrp.GetState().String(),
			lrp.GetDefinitionId(), lrp.GetCellId(), address(lrp.GetNetInfo()), routes(lrp.GetRoutePorts()), yesNo(lrp.GetRoutable()),
			yesNo(lrp.GetOccupied()),
			itoa(lrp.GetCrashCount()), timestamp(lrp.GetSince()), shorten(actualLRPReason(lrp), maxReasonWidth),
		}
	},
}

// maxReasonWidth keeps a reason from stretching every row of a table; the
// JSON output has it in full.
const maxReasonWidth = 60

// actualLRPReason is why an instance is not running: the crash reason of a
// CRASHED one, or why an UNCLAIMED one has no cell.
func actualLRPReason(lrp *models.ActualLRP) string {
	switch {
	case lrp.GetState() == models.ActualLRP_CRASHED:
		return lrp.GetCrashReason()
	case lrp.GetState() == models.ActualLRP_UNCLAIMED && lrp.GetCellId() == "":
		return lrp.GetPlacementError()
	}
	return ""
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

// printActualLRPAddresses prints the address of each instance that has
// one, host:port of its first port, a line each (-o address).
func printActualLRPAddresses(out io.Writer, lrps []*models.ActualLRP) error {
	for _, lrp := range lrps {
		n := lrp.GetNetInfo()
		if n.GetAddress() == "" || len(n.GetPorts()) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(out, "%s:%d\n", n.GetAddress(), n.GetPorts()[0].GetHostPort()); err != nil {
			return err
		}
	}
	return nil
}

// withPresence keeps the instances of lrps whose presence is presence
// (ORDINARY, RETIRING, EVACUATING or SUSPECT, any case); "" keeps them all.
func withPresence(lrps []*models.ActualLRP, presence string) ([]*models.ActualLRP, error) {
	if presence == "" {
		return lrps, nil
	}
	want, ok := models.ActualLRP_Presence_value[strings.ToUpper(presence)]
	if !ok {
		return nil, usageErrorf("--presence must be ORDINARY, RETIRING, EVACUATING or SUSPECT, got %q", presence)
	}
	var kept []*models.ActualLRP
	for _, lrp := range lrps {
		if int32(lrp.GetPresence()) == want {
			kept = append(kept, lrp)
		}
	}
	return kept, nil
}

// routes shows where each of an instance's routes goes, through its own
// definition's routes, e.g. hello.example.test->8080.
func routes(ports []*models.RoutePort) string {
	var shown []string
	for _, p := range ports {
		shown = append(shown, fmt.Sprintf("%s->%d", p.GetRoute(), p.GetContainerPort()))
	}
	return strings.Join(shown, ",")
}

func (a *app) actualLRPsCommand() *cobra.Command {
	var filter client.ActualLRPFilter
	var index int32
	var presence string
	cmd := &cobra.Command{
		Use:   "actual-lrps [--domain D] [--cell C] [--guid G] [--index I] [--presence P]",
		Short: "List instances (actual LRPs)",
		Long: `List instances (actual LRPs).

-o wide is the table with a PID column before REASON: the pid of each instance's
process as its cell's rep reports it (GET /v1/instances on the rep URL of 'cork
cells'; the board does not store pids). cork asks only the reps of the cells
the listed rows name, once each. "-" means the row names no cell or its rep runs
no such instance (yet, or any more); "?" means its rep did not answer, which a
warning on stderr explains. The pid leads the instance's process group, so
"kill -TERM -PID" reaches all of it. With isolation it is the instance's init,
the PID 1 of its PID namespace: SIGKILL to it ends the whole instance, other
signals to it alone are ignored (send them to the group).

-o address prints each listed instance's address, host:port of its first
port, a line each (one that has none yet is left out); -o pid each one's pid
as -o wide shows it (one its rep does not report is left out). Mid-rollout
or mid-move an index has two instances (its own and a RETIRING or
EVACUATING one): --presence ORDINARY keeps its own. For scripts:
curl http://$(cork actual-lrps --guid hello --index 0 -o address)/`,
		Annotations: map[string]string{wideAnnotation: "yes"},
		Args:        exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("index") {
				if index < 0 {
					return usageErrorf("--index must not be negative")
				}
				filter.Index = &index
			}
			if _, err := withPresence(nil, presence); err != nil {
				return err
			}
			lrps, err := a.client().ActualLRPs(ctx, filter)
			if err != nil {
				return err
			}
			if lrps, err = withPresence(lrps, presence); err != nil {
				return err
			}
			switch a.format {
			case formatWide:
				return a.printActualLRPsWide(ctx, lrps)
			case formatPid:
				return a.printActualLRPPids(ctx, lrps)
			case formatAddress:
				return printActualLRPAddresses(a.out, lrps)
			}
			return emit(a, lrps, actualLRPTable)
		}),
	}
	flags := cmd.Flags()
	flags.StringVar(&filter.Domain, "domain", "", "only instances in this domain")
	flags.StringVar(&filter.CellID, "cell", "", "only instances on this cell")
	flags.StringVar(&filter.ProcessGuid, "guid", "", "only instances of this process guid")
	flags.Int32Var(&index, "index", 0, "only instances with this index")
	flags.StringVar(&presence, "presence", "", "only instances of this presence: ORDINARY (each index's own; mid-rollout or mid-move an index also has a RETIRING or EVACUATING one), RETIRING, EVACUATING or SUSPECT")
	return cmd
}
