// Package db declares the board's storage seam: one interface per aggregate.
// db/sqldb is the one implementation, over SQLite, Postgres and MySQL.
//
// Every method returns *models.Error values for outcomes a client can act
// on (ResourceNotFound, ResourceExists, ResourceConflict, InvalidRequest), so
// handlers pass them through unchanged.
package db

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/models"
)

// DB is everything the board stores.
type DB interface {
	DomainDB
	DesiredLRPDB
	DefinitionDB
	ActualLRPDB
	CellDB
	ActualLRPLifecycleDB
	LeaseDB
	ConvergenceDB
}

type DomainDB interface {
	// UpsertDomain marks domain fresh for ttl; ttl 0 keeps it fresh forever.
	UpsertDomain(ctx context.Context, domain string, ttl time.Duration) error
	// FreshDomains lists domains that have not expired.
	FreshDomains(ctx context.Context) ([]*models.Domain, error)
}

// DesiredLRPFilter narrows list reads; zero values match everything.
type DesiredLRPFilter struct {
	Domain       string
	ProcessGuids []string
}

type DesiredLRPDB interface {
	// DesireLRP stores the DesiredLRP, its first definition (active), and one
	// UNCLAIMED ActualLRP per index stamped with that definition, in one
	// transaction. An existing guid is ResourceExists and changes nothing.
	DesireLRP(ctx context.Context, lrp *models.DesiredLRP) (*models.DesiredLRP, error)
	// DesiredLRPByProcessGuid returns the LRP with its active definition.
	DesiredLRPByProcessGuid(ctx context.Context, processGuid string) (*models.DesiredLRP, error)
	// DesiredLRPs returns matching LRPs with their active definitions.
	DesiredLRPs(ctx context.Context, filter DesiredLRPFilter) ([]*models.DesiredLRP, error)
	// DesiredLRPSchedulingInfos returns matching LRPs without run definitions.
	DesiredLRPSchedulingInfos(ctx context.Context, filter DesiredLRPFilter) ([]*models.DesiredLRPSchedulingInfo, error)
	// UpdateDesiredLRP applies the update; see models.DesiredLRPUpdate.
	UpdateDesiredLRP(ctx context.Context, processGuid string, update *models.DesiredLRPUpdate) (*models.DesiredLRP, error)
	// RemoveDesiredLRP deletes the LRP and its UNCLAIMED instances. Claimed
	// and running instances stay for the rep and convergence to stop; the
	// definitions stay while anything references them.
	RemoveDesiredLRP(ctx context.Context, processGuid string) error
}

type DefinitionDB interface {
	// Definitions lists the stored definitions of an LRP, newest first.
	Definitions(ctx context.Context, processGuid string) ([]*models.DefinitionSummary, error)
	// Definition returns one stored definition.
	Definition(ctx context.Context, processGuid, definitionID string) (*models.LRPDefinition, error)
}

// ActualLRPFilter narrows list reads; zero values match everything.
type ActualLRPFilter struct {
	Domain      string
	CellID      string
	ProcessGuid string
	Index       *int32
}

type ActualLRPDB interface {
	ActualLRPs(ctx context.Context, filter ActualLRPFilter) ([]*models.ActualLRP, error)
}
