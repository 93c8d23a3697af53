package migrations

import (
	"context"
	"fmt"
	"strings"
)

// addColumn is the Go half of a migration that adds table.column where it
// is missing. SQL alone cannot say "add a column unless it exists" on every
// dialect (SQLite and MySQL 8 have no ADD COLUMN IF NOT EXISTS), and every
// migration must be safe to run again (MySQL commits DDL as it goes, and
// --retry-dirty runs a migration anew). definition is the column's type
// and constraints in the dialect's words.
//
// name and revision are part of the migration's checksum: a step keeps
// them for as long as what it does stays the same.
func addColumn(name string, revision int, table, column string, definition func(driver) string) *goStep {
	return addColumns(name, revision, table, columnDef{column, definition})
}

// columnDef is one column an addColumns step adds: its name and its type
// and constraints in the dialect's words.
type columnDef struct {
	name       string
	definition func(driver) string
}

// addColumns is addColumn for several columns of one table, each added
// only where it is missing, in order: a run interrupted between two of
// them (MySQL commits each ALTER) adds the rest when it runs again.
func addColumns(name string, revision int, table string, columns ...columnDef) *goStep {
	ddl := func(dialect string, c columnDef) string {
		return "ALTER TABLE " + table + " ADD COLUMN " + c.name + " " + c.definition(driverOf(dialect))
	}
	return &goStep{
		Name:     name,
		Revision: revision,
		Describe: func(ctx context.Context, env stepEnv) (string, error) {
			var said []string
			for _, c := range columns {
				qualified := table + "." + c.name
				exists, err := columnExists(ctx, env.q, env.dialect, table, c.name)
				if err != nil {
					return "", err
				}
				if exists {
					said = append(said, qualified+" exists: nothing to add")
				} else {
					said = append(said, "add column "+qualified+": "+ddl(env.dialect, c))
				}
			}
			return strings.Join(said, "; "), nil
		},
		Run: func(ctx context.Context, env stepEnv) error {
			for _, c := range columns {
				exists, err := columnExists(ctx, env.q, env.dialect, table, c.name)
				if err != nil {
					return err
				}
				if exists {
					continue
				}
				if _, err := env.q.ExecContext(ctx, ddl(env.dialect, c)); err != nil {
					return fmt.Errorf("add column %s.%s: %w", table, c.name, err)
				}
			}
			return nil
		},
	}
}

// The column definitions below are the driver's column types, as
// method expressions (driver.booleanFalse is a func(driver) string).

// addRolloutsOperationID is migration 0007's Go half: rollouts.operation_id
// names the operation that started the rollout (empty for a rollout older
// than operations).
var addRolloutsOperationID = addColumn("add_rollouts_operation_id", 1, "rollouts", "operation_id",
	func(d driver) string { return d.boundedText(24) })

// addRolloutsStage is migration 0008's Go half: rollouts.stage, the
// protobuf of a staged rollout's models.RolloutStage (stored fields only),
// NULL while the rollout is not staged.
var addRolloutsStage = addColumn("add_rollouts_stage", 1, "rollouts", "stage", driver.nullBlob)

// addAutoscaling is migration 0009's Go half: desired_lrps.autoscaling,
// the protobuf of the LRP's models.Autoscaling (NULL: never set), and
// desired_lrps.autoscaler, the protobuf of its models.AutoscalerStatus
// (NULL while autoscaling is not enabled).
var addAutoscaling = addColumns("add_desired_lrps_autoscaling", 1, "desired_lrps",
	columnDef{"autoscaling", driver.nullBlob}, columnDef{"autoscaler", driver.nullBlob})

// addDefinitionRoutePorts is migration 0010's Go half: the routes a
// definition serves, as run_infos.routes (their protojson, as
// desired_lrps.routes) and run_infos.route_ports (the protobuf of the
// models.RoutePorts they name); NULL for definitions stored before it.
var addDefinitionRoutePorts = addColumns("add_run_infos_routes", 1, "run_infos",
	columnDef{"route_ports", driver.nullBlob}, columnDef{"routes", driver.nullText})

// addInstanceRoutePorts is migration 0011's Go half:
// actual_lrps.route_ports, the protobuf of the models.RoutePorts of the
// definition an instance runs, set when it starts.
var addInstanceRoutePorts = addColumn("add_actual_lrps_route_ports", 1, "actual_lrps", "route_ports", driver.nullBlob)

// addDefinitionHistory is migration 0014's Go half: run_infos.became_healthy
// (the definition is, or was, its LRP's healthy definition) and
// run_infos.failed_validation (a VALIDATE operation for it ended in ERROR
// before it became active), both false for the rows already there until
// the migration's SQL sets what those rows can tell.
var addDefinitionHistory = addColumns("add_run_infos_history", 1, "run_infos",
	columnDef{"became_healthy", driver.booleanFalse}, columnDef{"failed_validation", driver.booleanFalse})

// addCellIsolation is migration 0015's Go half: cells.isolation, how the
// cell's rep runs instances as it registered it ("full", "none"; empty for
// a rep that does not say, and for cells registered before).
var addCellIsolation = addColumn("add_cells_isolation", 1, "cells", "isolation",
	func(d driver) string { return d.boundedText(16) })

// addLeaseTenure is migration 0017's Go half: leases.tenure, the tenure
// number a lock row carries (db/rowlock): 0 for the leases already there,
// so that their next taking is tenure 1.
var addLeaseTenure = addColumn("add_leases_tenure", 1, "leases", "tenure",
	func(driver) string { return "BIGINT NOT NULL DEFAULT 0" })

// addRolloutsFast is migration 0019's Go half: rollouts.fast, the record
// is of a fast rollout (a rollback or abort asked fast, or an
// auto-revert); false for the records already there.
var addRolloutsFast = addColumn("add_rollouts_fast", 1, "rollouts", "fast", driver.booleanFalse)

// addRolloutsJudgement is migration 0020's Go half: rollouts.judgement,
// the protobuf of a rollout's models.RolloutJudgement (its analysis,
// failure policy, bake and verdicts), NULL when the update asked for none.
var addRolloutsJudgement = addColumn("add_rollouts_judgement", 1, "rollouts", "judgement", driver.nullBlob)

// addRolloutsGovernor is migration 0022's Go half: rollouts.admitted_at
// (Unix nanoseconds the rollout governor admitted the rollout, 0 while
// not), rollouts.queue_position (its place in the governor's queue, 0
// when not queued) and rollouts.queue_reason (what the queue says, ”
// unless queued); the migration's SQL admits the records already there.
var addRolloutsGovernor = addColumns("add_rollouts_governor", 1, "rollouts",
	columnDef{"admitted_at", func(driver) string { return "BIGINT NOT NULL DEFAULT 0" }},
	columnDef{"queue_position", func(driver) string { return "INTEGER NOT NULL DEFAULT 0" }},
	columnDef{"queue_reason", func(d driver) string { return d.boundedText(200) }})

// addCellsQuarantine is migration 0026's Go half: cells.quarantined_at
// (Unix nanoseconds the cell was quarantined, 0 while not),
// cells.quarantined_by and cells.quarantine_reason (who and why),
// cells.quarantine_cleared_at and cells.quarantine_cleared_by (when and by
// whom an operator last cleared it; 0 and ” for never). Every cell already
// there is neither.
var addCellsQuarantine = addColumns("add_cells_quarantine", 1, "cells",
	columnDef{"quarantined_at", func(driver) string { return "BIGINT NOT NULL DEFAULT 0" }},
	columnDef{"quarantined_by", func(d driver) string { return d.boundedText(256) }},
	columnDef{"quarantine_reason", func(d driver) string { return d.boundedText(1100) }},
	columnDef{"quarantine_cleared_at", func(driver) string { return "BIGINT NOT NULL DEFAULT 0" }},
	columnDef{"quarantine_cleared_by", func(d driver) string { return d.boundedText(256) }})

// addEventReceipts is migration 0028's Go half: event_outbox.receipt and
// event_log.receipt, a write transaction's commit receipt on its first
// event row (MySQL; NULL elsewhere and on every row already there).
var addEventReceipts = joinSteps("add_event_receipts", 1,
	addColumns("", 0, "event_outbox", columnDef{"receipt", driver.nullBlob}),
	addColumns("", 0, "event_log", columnDef{"receipt", driver.nullBlob}))

// addEventBundles is migration 0029's Go half: event_outbox.event_count
// and event_log.event_count, how many events the row holds (1 on every
// row already there; db/sqldb/bundle.go).
var addEventBundles = joinSteps("add_event_bundles", 1,
	addColumns("", 0, "event_outbox", columnDef{"event_count", eventCount}),
	addColumns("", 0, "event_log", columnDef{"event_count", eventCount}))

func eventCount(driver) string { return "SMALLINT NOT NULL DEFAULT 1" }

// addRolloutsFreezeExemption is migration 0021's Go half:
// rollouts.freeze_exemption, why an active freeze window does not hold the
// rollout ("revert", "override"; models.FreezeHolds), empty for the records
// already there.
var addRolloutsFreezeExemption = addColumn("add_rollouts_freeze_exemption", 1, "rollouts", "freeze_exemption",
	func(d driver) string { return d.boundedText(16) })

// addDisruptionBudgetAndDrains is migration 0024's Go half:
// desired_lrps.disruption_budget (the max_unavailable of the LRP's
// models.DisruptionBudget, empty when unset), and cells.drain_started_at,
// cells.drain_deadline and cells.drain_overdue_at (Unix nanoseconds; 0
// for a cell that does not drain, a drain without a deadline, or one no
// evacuation of which went ahead past its deadline).
var addDisruptionBudgetAndDrains = joinSteps("add_disruption_budget_and_drains", 1,
	addColumns("", 0, "desired_lrps", columnDef{"disruption_budget", func(d driver) string { return d.boundedText(16) }}),
	addColumns("", 0, "cells",
		columnDef{"drain_started_at", func(driver) string { return "BIGINT NOT NULL DEFAULT 0" }},
		columnDef{"drain_deadline", func(driver) string { return "BIGINT NOT NULL DEFAULT 0" }},
		columnDef{"drain_overdue_at", func(driver) string { return "BIGINT NOT NULL DEFAULT 0" }}))

// addDesiredLRPsBudgetGroup is migration 0027's Go half:
// desired_lrps.budget_group, the budget group the LRP names (its
// models.DisruptionBudget.group; empty for none, as for every LRP already
// there), and the index desired_lrps_budget_group on it, by which a drain's
// hand-over finds the other members of its LRP's group.
var addDesiredLRPsBudgetGroup = joinSteps("add_desired_lrps_budget_group", 1,
	addColumns("", 0, "desired_lrps", columnDef{"budget_group", func(d driver) string { return d.boundedText(255) }}),
	addIndex("desired_lrps", "desired_lrps_budget_group", "budget_group"))

// addIndex is a Go step that creates the index name on table (columns)
// where it is missing: MySQL has no CREATE INDEX IF NOT EXISTS.
func addIndex(table, name string, columns ...string) *goStep {
	ix := listIndex{table: table, name: name, columns: columns}
	return &goStep{
		Describe: func(ctx context.Context, env stepEnv) (string, error) {
			exists, err := indexExists(ctx, env.q, env.dialect, table, name)
			if err != nil || exists {
				return "index " + name + " exists: nothing to create", err
			}
			return "create index " + name + ": " + ix.create(), nil
		},
		Run: func(ctx context.Context, env stepEnv) error {
			exists, err := indexExists(ctx, env.q, env.dialect, table, name)
			if err != nil || exists {
				return err
			}
			if _, err := env.q.ExecContext(ctx, ix.create()); err != nil {
				return fmt.Errorf("create index %s: %w", name, err)
			}
			return nil
		},
	}
}

// joinSteps runs the Go steps in order as one, named name at revision:
// an addColumns step per table of a migration that adds columns to
// several.
func joinSteps(name string, revision int, steps ...*goStep) *goStep {
	return &goStep{
		Name:     name,
		Revision: revision,
		Describe: func(ctx context.Context, env stepEnv) (string, error) {
			var said []string
			for _, step := range steps {
				s, err := step.Describe(ctx, env)
				if err != nil {
					return "", err
				}
				said = append(said, s)
			}
			return strings.Join(said, "; "), nil
		},
		Run: func(ctx context.Context, env stepEnv) error {
			for _, step := range steps {
				if err := step.Run(ctx, env); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// addRolloutsBlockedBy is migration 0025's Go half: rollouts.blocked_by,
// the protobuf of the models.BlockedBy the planner last found blocking the
// rollout, NULL while nothing does.
var addRolloutsBlockedBy = addColumn("add_rollouts_blocked_by", 1, "rollouts", "blocked_by", driver.nullBlob)

// addOperationsBlockedBy is migration 0030's Go half: operations.blocked_by,
// the protobuf of the models.BlockedBy the planner last found holding a
// validation under way, NULL while nothing does.
var addOperationsBlockedBy = addColumn("add_operations_blocked_by", 1, "operations", "blocked_by", driver.nullBlob)
