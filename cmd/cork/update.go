package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

func (a *app) updateCommand() *cobra.Command {
	var (
		instances      int32
		definitionFile string
		identifier     string
		annotation     string
	)
	cmd := &cobra.Command{
		Use:   "update GUID [--instances N] [--definition FILE [--id ID]] [--annotation S]",
		Short: "Change a desired LRP's instances or annotation, or give it a new definition",
		Long: `Change a desired LRP. At least one change flag is required.

--instances and --annotation change the LRP in place; nothing restarts.
--definition FILE (a JSON LRPDefinition; '-' reads stdin) stores a new
definition and makes it active. --id names it (the update identifier): sending
the same identifier and content again is a no-op, the same identifier with
other content is a ResourceConflict. Without --id the board derives an id
from the content.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if flags.Changed("id") && !flags.Changed("definition") {
				return usageErrorf("--id names a new definition; it needs --definition")
			}
			if !flags.Changed("instances") && !flags.Changed("definition") && !flags.Changed("annotation") {
				return usageErrorf("update needs at least one of --instances, --definition, --annotation")
			}
			update := &models.DesiredLRPUpdate{}
			if flags.Changed("instances") {
				update.Instances = &instances
			}
			if flags.Changed("annotation") {
				update.Annotation = &annotation
			}
			if flags.Changed("definition") {
				var definition models.LRPDefinition
				if err := a.readSpec(definitionFile, &definition); err != nil {
					return err
				}
				if err := definition.Validate(); err != nil {
					return invalidSpec(definitionFile, err)
				}
				update.Definition = &definition
				update.UpdateIdentifier = identifier
			}
			lrp, err := a.client().UpdateDesiredLRP(ctx, args[0], update)
			if err != nil {
				return err
			}
			return emit(a, []*models.DesiredLRP{lrp}, desiredLRPTable)
		}),
	}
	flags := cmd.Flags()
	flags.Int32Var(&instances, "instances", 0, "desired number of instances")
	flags.StringVar(&definitionFile, "definition", "", "JSON file with the new LRPDefinition ('-' for stdin)")
	flags.StringVar(&identifier, "id", "", "update identifier naming the new definition")
	flags.StringVar(&annotation, "annotation", "", "new annotation")
	return cmd
}
