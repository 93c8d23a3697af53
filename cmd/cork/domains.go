package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

var domainTable = table[*models.Domain]{
	headers: []string{"DOMAIN", "EXPIRES"},
	row: func(d *models.Domain) []string {
		expires := "never"
		if d.GetExpiresAt() != 0 {
			expires = timestamp(d.GetExpiresAt())
		}
		return []string{d.GetDomain(), expires}
	},
}

func (a *app) domainsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "domains",
		Short: "List fresh domains",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			domains, err := a.client().Domains(ctx)
			if err != nil {
				return err
			}
			return emit(a, domains, domainTable)
		}),
	}
}

func (a *app) setDomainCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-domain DOMAIN [--ttl DURATION]",
		Short: "Mark a domain fresh for a while (0, the default, means forever; prints nothing on success)",
		Args:  exactArgs("DOMAIN"),
	}
	ttl := cmd.Flags().Duration("ttl", 0, "how long the domain stays fresh, e.g. 2m; 0 means forever")
	cmd.RunE = a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		if *ttl < 0 {
			return usageErrorf("--ttl must not be negative")
		}
		return a.client().UpsertDomain(ctx, args[0], *ttl)
	})
	return cmd
}

func (a *app) pingCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ping",
		Short: "Check that the board answers",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			available, err := a.client().Ping(ctx)
			if err != nil {
				return err
			}
			if a.format == formatTable {
				return printTable(a.out, []string{"AVAILABLE"}, [][]string{{yesNo(available)}})
			}
			return printJSONLines(a.out, []*models.PingResponse{{Available: available}})
		}),
	}
}
