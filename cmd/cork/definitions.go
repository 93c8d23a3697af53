package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/models"
)

var definitionSummaryTable = table[*models.DefinitionSummary]{
	headers: []string{"DEFINITION_ID", "CREATED", "ACTIVE", "HEALTHY", "EVER_HEALTHY", "FAILED_VALIDATION", "MEMORY_MB", "DISK_MB"},
	row: func(d *models.DefinitionSummary) []string {
		return []string{
			d.GetDefinitionId(), timestamp(d.GetCreatedAt()), yesNo(d.GetActive()), yesNo(d.GetHealthy()),
			yesNo(d.GetBecameHealthy()), yesNo(d.GetFailedValidation()),
			itoa(d.GetMemoryMb()), itoa(d.GetDiskMb()),
		}
	},
}

func (a *app) definitionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "definitions GUID",
		Short: "List the stored definitions of an LRP, newest first: active and healthy marks, whether each ever became healthy or failed validation",
		Args:  exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			definitions, err := a.client().Definitions(ctx, args[0])
			if err != nil {
				return err
			}
			return emit(a, definitions, definitionSummaryTable)
		}),
	}
}

func (a *app) definitionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "definition GUID DEFINITION_ID",
		Short: "Show one stored definition in full",
		Args:  exactArgs("GUID", "DEFINITION_ID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			definition, err := a.client().Definition(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			if a.format == formatTable {
				return printTable(a.out, []string{"FIELD", "VALUE"}, definitionFields(definition))
			}
			return printJSONLines(a.out, []*models.LRPDefinition{definition})
		}),
	}
}

// definitionFields lays a definition out as one field per row.
func definitionFields(d *models.LRPDefinition) [][]string {
	var env []string
	for _, e := range d.GetAction().GetEnv() {
		env = append(env, e.GetName()+"="+e.GetValue())
	}
	var ports []string
	for _, p := range d.GetPorts() {
		ports = append(ports, itoa(p))
	}
	return [][]string{
		{"definition_id", d.GetDefinitionId()},
		{"created_at", timestamp(d.GetCreatedAt())},
		{"path", d.GetAction().GetPath()},
		{"args", strings.Join(d.GetAction().GetArgs(), " ")},
		{"dir", d.GetAction().GetDir()},
		{"env", strings.Join(env, " ")},
		{"ports", strings.Join(ports, ",")},
		{"health_check", healthCheck(d.GetHealthCheck())},
		{"start_timeout_ms", itoa(d.GetStartTimeoutMs())},
		{"memory_mb", itoa(d.GetMemoryMb())},
		{"disk_mb", itoa(d.GetDiskMb())},
	}
}

func healthCheck(h *models.HealthCheck) string {
	switch h.GetType() {
	case models.HealthCheck_TCP:
		return fmt.Sprintf("tcp port %d", h.GetPort())
	case models.HealthCheck_HTTP:
		return fmt.Sprintf("http port %d path %s", h.GetPort(), h.GetPath())
	}
	return "process"
}
