package migrations

import (
	"context"
	"time"
)

// goStep is the Go half of a migration, for changes SQL cannot express
// (decoding blobs, re-encoding them as protobuf). It runs before the
// migration's SQL statements. Bump Revision whenever its behaviour changes:
// the revision is part of the migration's checksum.
type goStep struct {
	Name     string
	Revision int
	// Describe says, for `bbs-migrate plan`, what Run would do on this
	// database, without changing anything.
	Describe func(ctx context.Context, env stepEnv) (string, error)
	Run      func(ctx context.Context, env stepEnv) error
}

type stepEnv struct {
	q       querier
	dialect string
	now     func() time.Time
}

// registeredSteps maps a migration version to its Go step.
var registeredSteps = map[int]*goStep{
	2:  importLegacy,
	4:  addCellDraining,
	5:  addStopRequested,
	7:  addRolloutsOperationID,
	8:  addRolloutsStage,
	9:  addAutoscaling,
	10: addDefinitionRoutePorts,
	11: addInstanceRoutePorts,
	12: replaceListIndexes,
	14: addDefinitionHistory,
	15: addCellIsolation,
	17: addLeaseTenure,
	18: dropReceiptsCreatedAt,
	19: addRolloutsFast,
	20: addRolloutsJudgement,
	21: addRolloutsFreezeExemption,
	22: addRolloutsGovernor,
	24: addDisruptionBudgetAndDrains,
	25: addRolloutsBlockedBy,
	26: addCellsQuarantine,
	27: addDesiredLRPsBudgetGroup,
	28: addEventReceipts,
	29: addEventBundles,
	30: addOperationsBlockedBy,
}
