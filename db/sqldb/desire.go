package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// DesireLRP stores lrp, its definition as the first (active) version, and
// one UNCLAIMED ORDINARY ActualLRP per index, in one transaction. It returns
// what it stored: the definition with its id and created_at, the active
// definition id, a fresh modification tag and created_at.
//
// The definition id is lrp.Definition.DefinitionId when set, else
// models.GenerateDefinitionID. The first definition is also the healthy
// one: it is the baseline that abort returns to and that a failed first
// rollout reverts to (there is no earlier definition to trust more).
//
// Definitions outlive their LRP (see RemoveDesiredLRP), so desiring a guid
// again may meet a stored definition with the same id: the same content is
// reused, other content is ResourceConflict. Likewise a claimed or running
// ORDINARY instance left over at some index is kept instead of a new
// UNCLAIMED one.
//
// With autoscaling enabled, the instances stored (and returned) are
// lrp.Instances clamped into [min, max] (0 becomes min), and the
// autoscaler's state starts with that count wanted from now
// (models.SeedAutoscaler); lrp.Autoscaler is the board's and is ignored.
//
// It records its operation, DESIRE and FINISHED, in the same transaction
// (see db.OperationDB); a desire refused records nothing.
//
// On Postgres a guid with no stored definition of that id takes a one
// statement fast path with the same result (see desireNewPostgres).
func (s *SQLDB) DesireLRP(ctx context.Context, lrp *models.DesiredLRP) (*models.DesiredLRP, error) {
	if err := checkDesire(lrp); err != nil {
		return nil, err
	}
	now := s.now().UnixNano()
	stored := proto.Clone(lrp).(*models.DesiredLRP)
	def := stored.Definition
	def.DefinitionId = models.EffectiveDefinitionID(def, "")
	if err := checkWidth("desired_lrp.definition.definition_id", def.DefinitionId, maxDefinitionID); err != nil {
		return nil, err
	}
	stored.ActiveDefinitionId = def.DefinitionId
	stored.HealthyDefinitionId = def.DefinitionId
	stored.ModificationTag = &models.ModificationTag{Epoch: newEpoch()}
	stored.CreatedAt = now
	stored.Autoscaler = nil
	if stored.Autoscaling.IsEnabled() {
		stored.Instances = stored.Autoscaling.ClampInstances(stored.Instances)
		stored.Autoscaler = models.SeedAutoscaler(stored.Instances, now)
	}

	tags, err := encodePlacementTags(stored.PlacementTags)
	if err != nil {
		return nil, errInvalid("desired_lrp.placement_tags", err.Error())
	}
	routes, err := encodeRoutes(stored.Routes)
	if err != nil {
		return nil, errInvalid("desired_lrp.routes", err.Error())
	}
	strategy, err := encodeUpdateStrategy(stored.UpdateStrategy)
	if err != nil {
		return nil, errInvalid("desired_lrp.update_strategy", err.Error())
	}
	autoscaling, err := encodeAutoscaling(stored.Autoscaling)
	if err != nil {
		return nil, errInvalid("desired_lrp.autoscaling", err.Error())
	}
	autoscaler, err := encodeAutoscalerStatus(stored.Autoscaler)
	if err != nil {
		return nil, err
	}
	row := []any{
		stored.ProcessGuid, stored.Domain, stored.Instances, tags, routes, stored.Annotation,
		stored.ActiveDefinitionId, stored.HealthyDefinitionId, strategy,
		stored.ModificationTag.Epoch, int64(0), now, now, autoscaling, autoscaler,
		stored.DisruptionBudget.GetMaxUnavailable(), stored.DisruptionBudget.GetGroup(),
	}
	def.CreatedAt = now
	request := &models.DesireLRPRequest{DesiredLrp: lrp}

	if desireNew := s.driver.desireNew(); desireNew != nil {
		op, err := desireNew(s, ctx, stored, row, request)
		if err != nil {
			return nil, asModelError("desire lrp", err)
		}
		if op != nil {
			noteRecorded(ctx, op)
			return stored, nil
		}
	}

	insertDesired := dialect.Rebind(s.driver.name(), insertStatement("desired_lrps", desiredLRPColumns))
	// The desire's operation is numbered after the guid's highest (an
	// earlier LRP of the guid keeps its operations, the oldest perhaps
	// pruned); where the dialect joins statements it goes in one round
	// trip with the desired row.
	joined := s.driver.joinsStatements()
	err = s.transactOperation(ctx, "desire lrp", stored.ProcessGuid, func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		var rec *operationRecord
		if joined {
			var err error
			if rec, err = s.insertDesiredWithOperation(ctx, tx, insertDesired, row, stored, request, now); err != nil {
				if isUniqueViolation(err) {
					// The desired row or the operation's number exists: the
					// next attempt tells which, one statement at a time.
					joined = false
					return nil, nil, errLostRace
				}
				return nil, nil, err
			}
		} else if _, err := s.exec(ctx, tx, insertDesired, row...); err != nil {
			if isUniqueViolation(err) {
				return nil, nil, models.NewError(models.Error_ResourceExists, "desired_lrp %q already exists", stored.ProcessGuid)
			}
			return nil, nil, err
		}
		def.CreatedAt = now
		createdAt, err := s.putDefinition(ctx, tx, stored.ProcessGuid, def, stored.Routes, true)
		if err != nil {
			return nil, nil, err
		}
		def.CreatedAt = createdAt
		created, err := s.insertUnclaimed(ctx, tx, stored.ProcessGuid, stored.Domain, def.DefinitionId, 0, stored.Instances, now)
		if err != nil {
			return nil, nil, err
		}
		if rec == nil {
			if rec, err = s.newOperation(ctx, tx, stored.ProcessGuid, models.Operation_DESIRE, request, now); err != nil {
				return nil, nil, err
			}
			finishDesire(rec.op, stored, now)
			if err := s.insertOperation(ctx, tx, rec); err != nil {
				return nil, nil, err
			}
		}
		return rec.op, append(desiredEvents(stored, created), models.OperationChanged(rec.op)), nil
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// insertDesiredWithOperation inserts the desired row and the desire's
// operation in one round trip (driver.joinsStatements), after reading
// the guid's highest operation number. A unique violation does not say
// which of the two exists.
func (s *SQLDB) insertDesiredWithOperation(ctx context.Context, tx *sql.Tx, insertDesired string, row []any,
	stored *models.DesiredLRP, request *models.DesireLRPRequest, now int64) (*operationRecord, error) {
	rec, err := s.newOperation(ctx, tx, stored.ProcessGuid, models.Operation_DESIRE, request, now)
	if err != nil {
		return nil, err
	}
	finishDesire(rec.op, stored, now)
	values, err := s.operationValues(rec)
	if err != nil {
		return nil, err
	}
	insertOperation := dialect.Rebind(s.driver.name(), insertStatement("operations", operationColumns))
	_, err = tx.ExecContext(ctx, insertDesired+";\n"+insertOperation, append(slices.Clip(row), values...)...)
	return rec, err
}

// finishDesire makes op the record of stored's desire: FINISHED at once,
// its definition the one desired.
func finishDesire(op *models.Operation, stored *models.DesiredLRP, now int64) {
	op.DefinitionId = stored.ActiveDefinitionId
	setOperationStatus(op, models.Operation_FINISHED, "", now)
	line := fmt.Sprintf("desired %s of definition %s", pluralInstances(stored.Instances), stored.ActiveDefinitionId)
	if stored.Autoscaling.IsEnabled() {
		line += "; autoscaling enabled: " + stored.Autoscaling.Describe()
	}
	addHistory(op, now, line)
}

// pluralInstances is "1 instance", "4 instances".
func pluralInstances(n int32) string {
	if n == 1 {
		return "1 instance"
	}
	return fmt.Sprintf("%d instances", n)
}

// desiredEvents are the events of a desire: the LRP, then its instances
// in index order.
func desiredEvents(stored *models.DesiredLRP, created []*models.ActualLRP) []models.Event {
	events := make([]models.Event, 0, 1+len(created))
	events = append(events, models.DesiredLRPCreated(stored))
	for _, lrp := range created {
		events = append(events, models.ActualLRPCreated(lrp))
	}
	return events
}

// checkDesire rejects input that would store a broken record. Full
// validation is the handlers' job (models' Validate); this only keeps the
// database consistent when a caller skips it.
func checkDesire(lrp *models.DesiredLRP) error {
	switch {
	case lrp == nil:
		return errInvalid("desired_lrp", "is required")
	case lrp.ProcessGuid == "":
		return errInvalid("desired_lrp.process_guid", "is required")
	case lrp.Definition == nil:
		return errInvalid("desired_lrp.definition", "is required")
	case lrp.Instances < 0:
		return errInvalid("desired_lrp.instances", "must not be negative")
	}
	if err := checkEncodable(lrp.Definition); err != nil {
		return errInvalid("desired_lrp.definition", err.Error())
	}
	if err := lrp.Autoscaling.ValidateIn("desired_lrp"); err != nil {
		return err
	}
	if err := checkName("desired_lrp.process_guid", lrp.ProcessGuid, maxProcessGuid); err != nil {
		return err
	}
	return checkName("desired_lrp.domain", lrp.Domain, maxDomain)
}

// checkName is what the store asks of a name it keys or filters on,
// whoever calls it: the models' name rules (printable, valid UTF-8, no
// leading or trailing space: MySQL's PAD SPACE would make "a " equal "a",
// and Postgres refuses NUL) and the column's width, so that every dialect
// answers alike.
func checkName(field, value string, max int) error {
	if err := models.ValidateName(field, value); err != nil {
		return err
	}
	return checkWidth(field, value, max)
}

// Widths of the key columns in the schema. Postgres and MySQL refuse longer
// values while SQLite would store them; checking here makes every dialect
// answer alike.
const (
	maxProcessGuid  = 128
	maxDefinitionID = 64
	maxDomain       = 255
)

func checkWidth(field, value string, max int) error {
	if utf8.RuneCountInString(value) > max {
		return errInvalid(field, fmt.Sprintf("must be at most %d characters", max))
	}
	return nil
}

// checkEncodable catches what protobuf cannot encode (invalid UTF-8 in a
// string) before the content hash, which requires an encodable definition.
func checkEncodable(def *models.LRPDefinition) error {
	_, err := deterministic.Marshal(def)
	return err
}

// putDefinition stores def (with its id set), serving routes, unless a
// definition with that id is already stored for the guid. An existing one
// with the same content is kept, now serving routes, and its created_at
// returned; one with other content is ResourceConflict. healthy says the
// definition becomes the LRP's healthy one (a desire's first definition):
// it is then marked as having become healthy, stored or kept.
func (s *SQLDB) putDefinition(ctx context.Context, tx *sql.Tx, processGuid string, def *models.LRPDefinition, routes *structpb.Struct,
	healthy bool) (int64, error) {
	hash := models.DefinitionContentHash(def)
	// The blob may be sealed (a fresh nonce each time), so reuse compares
	// content hashes, never blobs.
	blob, err := s.encodeDefinition(processGuid, def)
	if err != nil {
		return 0, err
	}
	served, err := encodeServedRoutes(routes)
	if err != nil {
		return 0, err
	}
	insert := s.driver.insertMissing("run_infos", runInfoColumns, runInfoKey, 1)
	res, err := s.exec(ctx, tx, insert,
		processGuid, def.DefinitionId, hash, def.MemoryMb, def.DiskMb, blob, def.CreatedAt, served.ports, served.routes, healthy)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return def.CreatedAt, err
	}
	// The stored definition is reused: lock it, so that convergence's
	// cleanup, which locks a definition before it deletes it unreferenced
	// (deleteDefinitions), either deletes it first — this read then finds
	// it gone and the transaction runs again, storing it anew — or waits
	// and sees this transaction's reference.
	var storedHash string
	var createdAt int64
	err = s.queryRow(ctx, tx, "SELECT content_hash, created_at FROM run_infos WHERE process_guid = ? AND definition_id = ?"+
		s.driver.lockForUpdate(), processGuid, def.DefinitionId).Scan(&storedHash, &createdAt)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errLostRace
	}
	if err != nil {
		return 0, err
	}
	if storedHash != hash {
		return 0, models.NewError(models.Error_ResourceConflict,
			"definition %q of desired_lrp %q is already stored with other content; choose another update_identifier",
			def.DefinitionId, processGuid)
	}
	if err := s.setDefinitionRoutes(ctx, tx, processGuid, def.DefinitionId, routes); err != nil {
		return 0, err
	}
	if healthy {
		if err := s.markBecameHealthy(ctx, tx, processGuid, def.DefinitionId); err != nil {
			return 0, err
		}
	}
	return createdAt, nil
}

// insertUnclaimed adds an UNCLAIMED ORDINARY instance for every index in
// [from, to) that has no ORDINARY instance yet, in batches, and returns the
// instances it added, as stored, in index order.
func (s *SQLDB) insertUnclaimed(ctx context.Context, tx *sql.Tx, processGuid, domain, definitionID string, from, to int32, now int64) ([]*models.ActualLRP, error) {
	perRow := len(unclaimedActualLRPColumns)
	var created []*models.ActualLRP
	for start := int64(from); start < int64(to); start += batchSize {
		end := min(int64(to), start+batchSize)
		rows := int(end - start)
		batch := make([]*models.ActualLRP, 0, rows)
		args := make([]any, 0, rows*perRow)
		for index := start; index < end; index++ {
			lrp := newUnclaimed(processGuid, int32(index), domain, definitionID, newEpoch(), now)
			batch = append(batch, lrp)
			args = append(args, processGuid, int32(index), presenceOrdinary, domain, definitionID, stateUnclaimed,
				now, "", "", lrp.ModificationTag.Epoch, int64(0))
		}
		insert := s.driver.insertMissing("actual_lrps", unclaimedActualLRPColumns, actualLRPKey, rows)
		res, err := s.exec(ctx, tx, insert, args...)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		if int(n) < rows {
			if batch, err = s.ownRows(ctx, tx, batch); err != nil {
				return nil, err
			}
		}
		created = append(created, batch...)
	}
	return created, nil
}

// newUnclaimed is an UNCLAIMED ORDINARY instance as insertUnclaimed stores
// it.
func newUnclaimed(processGuid string, index int32, domain, definitionID, tagEpoch string, now int64) *models.ActualLRP {
	return &models.ActualLRP{
		ProcessGuid:     processGuid,
		Index:           index,
		Presence:        models.ActualLRP_ORDINARY,
		Domain:          domain,
		DefinitionId:    definitionID,
		State:           models.ActualLRP_UNCLAIMED,
		Since:           now,
		ModificationTag: &models.ModificationTag{Epoch: tagEpoch},
	}
}

// Enum names as stored.
var (
	presenceOrdinary = models.ActualLRP_ORDINARY.String()
	stateUnclaimed   = models.ActualLRP_UNCLAIMED.String()
)
