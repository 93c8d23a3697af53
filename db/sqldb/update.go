package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// UpdateDesiredLRP applies the set fields of update in one transaction and
// returns the LRP as stored afterwards. Every successful update, even an
// empty or idempotent one, moves the modification tag index on by one.
//
//   - modification_tag, when set, must equal the stored tag, else
//     ResourceConflict and nothing is written.
//   - instances up adds UNCLAIMED ORDINARY instances for the new indices on
//     the (new) active definition; instances down deletes the UNCLAIMED
//     ORDINARY instances at indices ≥ the new count. Claimed and running
//     instances are left for convergence to delete.
//   - routes, annotation and update_strategy replace the stored values.
//   - definition stores a new version under update_identifier (else the
//     definition's own definition_id, else models.GenerateDefinitionID) and
//     makes it active. An id already stored with the same content is not
//     stored again but made active: sending an update twice is a no-op, and
//     re-sending an older kept definition under its id rolls back to it. An
//     id stored with other content is ResourceConflict and nothing is written.
//     When the active definition changes, the LRP's rollout record becomes
//     a new PROGRESSING rollout to it (see rollouts.go) and rollout_changed
//     follows the other events; re-sending the active definition leaves
//     the record alone.
//   - autoscaling replaces the stored settings (see models.AutoscaledUpdate): a
//     change that leaves autoscaling enabled clamps instances into its
//     bounds (enabling it also starts the autoscaler's state afresh), and
//     disabling it keeps instances and clears that state. While
//     autoscaling is enabled and the update does not disable it, setting
//     instances is refused (InvalidRequest on "update.instances",
//     models.ErrInstancesAutoscaled) and nothing is written.
//   - staged, with a definition that becomes active, starts that rollout
//     in a staged phase (models.NewRolloutStage); a queued update
//     keeps it in its stored request and starts its phase when convergence
//     starts it.
//
// The update records its operation (see db.OperationDB): UPDATE, FINISHED;
// or, when it activates a definition, UPDATE_DEFINITION, IN_PROGRESS,
// superseding the LRP's operations that have not ended. With queue set and
// a definition other than the active one, while an operation of the LRP
// has not ended (a change of definition in progress, or one waiting its
// turn), the update waits instead: the definition is stored, nothing else
// is written (not even the tag), and the operation is PENDING until
// convergence starts it (ApplyConvergence, OperationWrite.Start). Waiting
// behind a PENDING operation too keeps the LRP's changes of definition in
// the order they were asked for.
//
// Concurrent updates of one LRP queue on its row: it is read with a row lock
// (SQLite has one writer at a time anyway), so a second update sees the
// first one's result, and a tag it carried from before is stale:
// ResourceConflict. The write itself is also a compare-and-set on the tag;
// should it match no row all the same, the update is re-run on the fresh
// row, a bounded number of times (where a tag it carried is then stale).
//
// On Postgres an update that sends no definition and no routes, of an LRP
// with no operation that has not ended, takes a fast path with the same
// result: one unlocked read and one statement (see updateNowPostgres).
func (s *SQLDB) UpdateDesiredLRP(ctx context.Context, processGuid string, update *models.DesiredLRPUpdate) (*models.DesiredLRP, error) {
	if update == nil {
		update = &models.DesiredLRPUpdate{}
	}
	if update.Instances != nil && *update.Instances < 0 {
		return nil, errInvalid("update.instances", "must not be negative")
	}
	change, err := s.prepareUpdate(update)
	if err != nil {
		return nil, err
	}
	request := &models.UpdateDesiredLRPRequest{ProcessGuid: processGuid, Update: update}
	inTx := func(tx *sql.Tx) (*models.DesiredLRP, *models.Operation, []models.Event, error) {
		return s.updateInTx(ctx, tx, processGuid, update, change, request)
	}
	if updateNow := s.driver.updateNow(); updateNow != nil && updatesAtOnce(update) {
		lrp, op, err := updateNow(s, ctx, processGuid, update, change, request, inTx)
		if err != nil {
			return nil, asModelError("update desired lrp", err)
		}
		if lrp != nil {
			noteRecorded(ctx, op)
			return lrp, nil
		}
	}
	var updated *models.DesiredLRP
	err = s.transactOperation(ctx, "update desired lrp", processGuid, func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		var op *models.Operation
		var events []models.Event
		var err error
		updated, op, events, err = inTx(tx)
		return op, events, err
	})
	if err != nil {
		return nil, err
	}
	return updated, nil
}

// updateInTx is UpdateDesiredLRP's transactional path in tx: it returns
// the LRP as stored afterwards, the operation it recorded and the events.
func (s *SQLDB) updateInTx(ctx context.Context, tx *sql.Tx, processGuid string, update *models.DesiredLRPUpdate, change *desiredChange,
	request *models.UpdateDesiredLRPRequest) (*models.DesiredLRP, *models.Operation, []models.Event, error) {
	locked, err := s.lockDesiredForUpdate(ctx, tx, processGuid)
	if err != nil {
		return nil, nil, nil, err
	}
	before := locked.lrp
	if err := refuseUpdate(before, update); err != nil {
		return nil, nil, nil, err
	}
	if err := s.checkUpdateRoutes(ctx, tx, before, update); err != nil {
		return nil, nil, nil, err
	}
	now := s.now().UnixNano()
	var unfinished []*operationRecord
	if locked.unfinished {
		if unfinished, err = s.unfinishedOperations(ctx, tx, processGuid); err != nil {
			return nil, nil, nil, err
		}
	}
	rec, err := s.nextOperation(ctx, processGuid, locked.lastSequence, models.Operation_UPDATE, request, now)
	if err != nil {
		return nil, nil, nil, err
	}
	if update.Validate && change.activates(before) {
		updated, events, err := s.validateUpdate(ctx, tx, rec, change, unfinished, now)
		return updated, rec.op, events, err
	}
	if update.Queue && change.activates(before) && len(unfinished) > 0 {
		updated, events, err := s.queueUpdate(ctx, tx, rec, change, unfinished[len(unfinished)-1].op, now)
		return updated, rec.op, events, err
	}
	applied, err := s.applyUpdate(ctx, tx, before, update, change, rec.op.Id, now)
	if err != nil {
		return nil, nil, nil, err
	}
	var ended []*models.Operation
	if applied.activated {
		rec.op.Kind = models.Operation_UPDATE_DEFINITION
		if ended, err = s.startDefinitionChange(ctx, tx, rec, applied.after.ActiveDefinitionId, unfinished, nil, now); err != nil {
			return nil, nil, nil, err
		}
	} else {
		setOperationStatus(rec.op, models.Operation_FINISHED, "", now)
	}
	addHistory(rec.op, now, describeUpdate(before, applied.after, update, change, applied.activated))
	if err := s.insertOperation(ctx, tx, rec); err != nil {
		return nil, nil, nil, err
	}
	events := append(applied.events, operationEvents(append([]*models.Operation{rec.op}, ended...)...)...)
	return applied.after, rec.op, events, nil
}

// updatesAtOnce reports whether update, by what it asks alone, is one
// the transactional path finishes at once, FINISHED, whatever operations
// of the LRP have not ended: it sends no definition (so it activates
// none, and validate, queue and staged have nothing to act on). Routes
// are left out too: applying them reads and writes every definition and
// instance that serves them, which the fast path does not restate.
func updatesAtOnce(update *models.DesiredLRPUpdate) bool {
	return update.Definition == nil && update.Routes == nil && !update.Validate && !update.Queue && update.Staged == nil
}

// refuseUpdate is the error an update of before gets whatever else it
// sends: a client's modification tag that is not the stored one, or
// instances asked of an autoscaled LRP; nil when neither.
func refuseUpdate(before *models.DesiredLRP, update *models.DesiredLRPUpdate) error {
	if tag := update.ModificationTag; tag != nil && (tag.Epoch != before.ModificationTag.Epoch || tag.Index != before.ModificationTag.Index) {
		return staleTag(before.ProcessGuid)
	}
	if update.Instances != nil && models.AutoscalingAfter(before, update).IsEnabled() {
		return errInvalid("update.instances", models.ErrInstancesAutoscaled)
	}
	return nil
}

// checkUpdateRoutes refuses an update whose routes would send a route to
// a port its definition does not expose (models.ValidateUpdateRoutes);
// the active definition's ports are read only for a change of routes
// alone.
func (s *SQLDB) checkUpdateRoutes(ctx context.Context, tx *sql.Tx, before *models.DesiredLRP, update *models.DesiredLRPUpdate) error {
	var activePorts []uint32
	if update.Routes != nil && update.Definition == nil {
		var err error
		if activePorts, err = s.definitionPorts(ctx, tx, before.ProcessGuid, before.ActiveDefinitionId); err != nil {
			return err
		}
	}
	return models.ValidateUpdateRoutes(update, before.Routes, activePorts)
}

// validateUpdate records rec, an update with a new definition and
// validate, as a VALIDATE operation (see holdUpdate). With no operation of
// the LRP that has not ended it is IN_PROGRESS at once, under the
// convergence lease of the moment: convergence runs one instance of the
// definition at models.ValidationIndex and, once it is healthy, applies
// the update (OperationWrite.Start). Otherwise it waits PENDING behind the
// last one, as a queued update does, and its validation starts in its
// turn. It supersedes nothing.
func (s *SQLDB) validateUpdate(ctx context.Context, tx *sql.Tx, rec *operationRecord, c *desiredChange,
	unfinished []*operationRecord, now int64) (*models.DesiredLRP, []models.Event, error) {
	return s.holdUpdate(ctx, tx, rec, c, now, func(op *models.Operation) error {
		op.Kind = models.Operation_VALIDATE
		stored := fmt.Sprintf("definition %s stored", op.DefinitionId)
		if len(unfinished) > 0 {
			setOperationStatus(op, models.Operation_PENDING, "", now)
			addHistory(op, now, fmt.Sprintf("%s; queued behind %s, then validated before it becomes active",
				stored, operationName(unfinished[len(unfinished)-1].op)))
			return nil
		}
		owner, expires, err := s.leaseOfTheMoment(ctx, tx, now)
		if err != nil {
			return err
		}
		op.LeaseOwner, op.LeaseExpiresAt = owner, expires
		setOperationStatus(op, models.Operation_IN_PROGRESS, "", now)
		addHistory(op, now, stored+"; "+validatingLine(op.DefinitionId))
		return nil
	})
}

// validatingLine is the history line of a validation that starts.
func validatingLine(definitionID string) string {
	return fmt.Sprintf("validating %s with one unroutable instance before it becomes active", definitionID)
}

// queueUpdate records rec, an update with a new definition that waits
// behind the LRP's operation last (not ended), as PENDING (see holdUpdate).
func (s *SQLDB) queueUpdate(ctx context.Context, tx *sql.Tx, rec *operationRecord, c *desiredChange, last *models.Operation, now int64) (*models.DesiredLRP, []models.Event, error) {
	return s.holdUpdate(ctx, tx, rec, c, now, func(op *models.Operation) error {
		op.Kind = models.Operation_UPDATE_DEFINITION
		setOperationStatus(op, models.Operation_PENDING, "", now)
		addHistory(op, now, fmt.Sprintf("definition %s stored; queued behind %s", op.DefinitionId, operationName(last)))
		return nil
	})
}

// holdUpdate records rec, an update with a new definition that does not
// apply now (queued, or validated first): it stores the definition, as the
// update would (so a conflicting one is refused now), lets mark set the
// operation's kind, status, lease and history, and writes nothing else.
// It returns the LRP as it stands and the events: operation_changed for
// rec.
func (s *SQLDB) holdUpdate(ctx context.Context, tx *sql.Tx, rec *operationRecord, c *desiredChange, now int64,
	mark func(op *models.Operation) error) (*models.DesiredLRP, []models.Event, error) {
	current, err := s.desiredLRP(ctx, tx, rec.op.ProcessGuid)
	if err != nil {
		return nil, nil, err
	}
	def := proto.Clone(c.definition).(*models.LRPDefinition)
	def.CreatedAt = now
	if _, err := s.putDefinition(ctx, tx, rec.op.ProcessGuid, def, c.routesFor(current), false); err != nil {
		return nil, nil, err
	}
	rec.op.DefinitionId = def.DefinitionId
	if err := mark(rec.op); err != nil {
		return nil, nil, err
	}
	if err := s.insertOperation(ctx, tx, rec); err != nil {
		return nil, nil, err
	}
	return current, operationEvents(rec.op), nil
}

// describeUpdate is the first line of an update's history: what it changed,
// in words. after is the LRP after the update.
func describeUpdate(before, after *models.DesiredLRP, update *models.DesiredLRPUpdate, c *desiredChange, activated bool) string {
	var parts []string
	switch {
	case activated:
		parts = append(parts, fmt.Sprintf("definition %s activated: rolling from %s to %s",
			c.definition.DefinitionId, before.ActiveDefinitionId, c.definition.DefinitionId))
		if update.Staged != nil {
			parts = append(parts, describeStaged(update.Staged))
		}
		if update.OverrideFreeze {
			parts = append(parts, "overrides any freeze window: "+update.OverrideReason)
		}
	case c.definition != nil:
		parts = append(parts, fmt.Sprintf("definition %s is active already", c.definition.DefinitionId))
	}
	if a := update.Autoscaling; a != nil {
		switch {
		case !a.IsEnabled() && before.Autoscaling.IsEnabled():
			parts = append(parts, "autoscaling disabled")
		case !a.IsEnabled():
			parts = append(parts, "autoscaling settings replaced, disabled")
		case before.Autoscaling.IsEnabled():
			parts = append(parts, "autoscaling settings replaced: "+a.Describe())
		default:
			parts = append(parts, "autoscaling enabled: "+a.Describe())
		}
	}
	switch {
	case after.GetInstances() != before.Instances:
		parts = append(parts, fmt.Sprintf("instances %d → %d", before.Instances, after.GetInstances()))
	case update.Instances != nil:
		parts = append(parts, fmt.Sprintf("instances stay %d", before.Instances))
	}
	if update.Routes != nil {
		parts = append(parts, "routes replaced")
	}
	if update.Annotation != nil {
		parts = append(parts, "annotation replaced")
	}
	if update.UpdateStrategy != nil {
		parts = append(parts, "update strategy replaced")
	}
	if b := update.DisruptionBudget; b != nil {
		if b.GetMaxUnavailable() == "" {
			parts = append(parts, "disruption budget: the update strategy's max_unavailable")
		} else {
			parts = append(parts, "disruption budget: max_unavailable "+b.GetMaxUnavailable())
		}
		if b.GetGroup() != "" {
			parts = append(parts, "budget group "+b.GetGroup())
		}
	}
	if len(parts) == 0 {
		return "nothing to change"
	}
	return strings.Join(parts, "; ")
}

// desiredChange is the part of an update that can be encoded before the
// transaction starts.
type desiredChange struct {
	columns    []string // "column = ?" assignments
	args       []any
	definition *models.LRPDefinition // with its id set; created_at set per attempt
	// autoscaling is the update's settings, encoded; instances and the
	// autoscaler's state depend on the LRP before (models.AutoscaledUpdate).
	autoscaling []byte
	// routes, when the update sets them, go to every definition that
	// serves them, and to their instances (applyRoutes).
	routes *structpb.Struct
	// storedRoutes, storedStrategy and storedAutoscaling are the update's
	// values as a read of the stored row decodes them (updatedRow).
	storedRoutes      *structpb.Struct
	storedStrategy    *models.UpdateStrategy
	storedAutoscaling *models.Autoscaling
}

// routesFor is what the change's definition serves: the update's routes,
// else the LRP's.
func (c *desiredChange) routesFor(before *models.DesiredLRP) *structpb.Struct {
	if c.routes != nil {
		return c.routes
	}
	return before.GetRoutes()
}

func (s *SQLDB) prepareUpdate(update *models.DesiredLRPUpdate) (*desiredChange, error) {
	if err := checkStaged(update); err != nil {
		return nil, err
	}
	if err := update.Autoscaling.ValidateIn("update"); err != nil {
		return nil, err
	}
	c := &desiredChange{}
	if update.Autoscaling != nil {
		var err error
		if c.autoscaling, err = encodeAutoscaling(update.Autoscaling); err != nil {
			return nil, errInvalid("update.autoscaling", err.Error())
		}
		if c.storedAutoscaling, err = decodeAutoscaling(c.autoscaling); err != nil {
			return nil, errInvalid("update.autoscaling", err.Error())
		}
	}
	if update.Routes != nil {
		routes, err := encodeRoutes(update.Routes)
		if err != nil {
			return nil, errInvalid("update.routes", err.Error())
		}
		c.columns = append(c.columns, "routes = ?")
		c.args = append(c.args, routes)
		c.routes = update.Routes
		if c.storedRoutes, err = decodeRoutes(routes); err != nil {
			return nil, errInvalid("update.routes", err.Error())
		}
	}
	if update.Annotation != nil {
		c.columns = append(c.columns, "annotation = ?")
		c.args = append(c.args, *update.Annotation)
	}
	if update.UpdateStrategy != nil {
		strategy, err := encodeUpdateStrategy(update.UpdateStrategy)
		if err != nil {
			return nil, errInvalid("update.update_strategy", err.Error())
		}
		c.columns = append(c.columns, "update_strategy = ?")
		c.args = append(c.args, strategy)
		if c.storedStrategy, err = decodeUpdateStrategy(strategy, strategy != nil); err != nil {
			return nil, errInvalid("update.update_strategy", err.Error())
		}
	}
	if update.DisruptionBudget != nil {
		budget, group := encodeDisruptionBudget(update.DisruptionBudget)
		c.columns = append(c.columns, "disruption_budget = ?", "budget_group = ?")
		c.args = append(c.args, budget, group)
	}
	if update.Definition != nil {
		if err := checkEncodable(update.Definition); err != nil {
			return nil, errInvalid("update.definition", err.Error())
		}
		def := proto.Clone(update.Definition).(*models.LRPDefinition)
		def.DefinitionId = models.EffectiveDefinitionID(def, update.UpdateIdentifier)
		if err := checkWidth("update.update_identifier", def.DefinitionId, maxDefinitionID); err != nil {
			return nil, err
		}
		c.definition = def
	}
	return c, nil
}

// activates reports whether the change makes a definition other than
// before's active one active.
func (c *desiredChange) activates(before *models.DesiredLRP) bool {
	return c.definition != nil && c.definition.DefinitionId != before.ActiveDefinitionId
}

// appliedUpdate is what applyUpdate wrote.
type appliedUpdate struct {
	after *models.DesiredLRP
	// events: desired_lrp_changed, then actual_lrp_created or
	// actual_lrp_removed for each instance a scale added or deleted, then
	// rollout_changed when a rollout started.
	events []models.Event
	// activated: the active definition changed, and a rollout to it
	// started, carrying operationID.
	activated bool
}

// applyUpdate writes update (c, prepared from it) over before, the LRP as
// read locked in tx, whatever its modification tag says (the callers check
// it, or, for a queued operation, ignore it): UpdateDesiredLRP, and
// convergence starting a queued update. A rollout it starts carries
// operationID, the operation recording the update.
func (s *SQLDB) applyUpdate(ctx context.Context, tx *sql.Tx, before *models.DesiredLRP, update *models.DesiredLRPUpdate, c *desiredChange, operationID string, now int64) (*appliedUpdate, error) {
	processGuid := before.ProcessGuid
	change := models.ApplyUpdate(before, update, now)
	set, args, err := desiredUpdateSet(before, update, c, change, now)
	if err != nil {
		return nil, err
	}
	// The row is locked, so the compare-and-set cannot miss; if it did,
	// the caller runs again rather than write blind.
	if err := s.updateDesiredRow(ctx, tx, before, set, args...); err != nil {
		return nil, err
	}

	var rollout *rolloutRecord
	if c.definition != nil {
		def := proto.Clone(c.definition).(*models.LRPDefinition)
		def.CreatedAt = now
		if _, err := s.putDefinition(ctx, tx, processGuid, def, c.routesFor(before), false); err != nil {
			return nil, err
		}
		if change.Activated {
			// A queued update keeps its request (staged included) in its
			// operation's parameters, so convergence starting it comes
			// through here too.
			reason := convergence.RollingReason(before.ActiveDefinitionId, change.ActiveDefinitionID)
			if rollout, err = s.startRollout(ctx, tx, processGuid, change.ActiveDefinitionID, reason, operationID, change.Stage, false, change.FreezeExemption, change.Judgement, now); err != nil {
				return nil, err
			}
		}
	}
	var rerouted []models.Event
	if c.routes != nil {
		if rerouted, err = s.applyRoutes(ctx, tx, processGuid, c.routes); err != nil {
			return nil, err
		}
	}
	var scaled []models.Event
	if change.Instances != nil {
		scaled, err = s.scale(ctx, tx, processGuid, before.Domain, change.ActiveDefinitionID, change.ScaleFrom, change.ScaleTo, now)
		if err != nil {
			return nil, err
		}
	}
	after, err := s.updatedRow(ctx, tx, before, update, c, change)
	if err != nil {
		return nil, err
	}
	events := append([]models.Event{models.DesiredLRPChanged(before, after)}, rerouted...)
	events = append(events, scaled...)
	if rollout != nil {
		status, err := s.rolloutStatus(ctx, tx, processGuid, after, rollout, now)
		if err != nil {
			return nil, err
		}
		events = append(events, models.RolloutChanged(status))
	}
	return &appliedUpdate{after: after, events: events, activated: rollout != nil}, nil
}

// desiredUpdateSet is what an update writes to the desired row over
// before (change is models.ApplyUpdate's): the assignments of an UPDATE's
// SET, with ? bound to args, moving the tag index on by one.
func desiredUpdateSet(before *models.DesiredLRP, update *models.DesiredLRPUpdate, c *desiredChange, change models.UpdateChange, now int64) (string, []any, error) {
	columns := slices.Clone(c.columns)
	args := slices.Clone(c.args)
	if change.Instances != nil {
		columns, args = append(columns, "instances = ?"), append(args, *change.Instances)
	}
	if update.Autoscaling != nil {
		columns, args = append(columns, "autoscaling = ?"), append(args, c.autoscaling)
	}
	switch {
	case change.Autoscaler.Clear:
		columns = append(columns, "autoscaler = NULL")
	case change.Autoscaler.Seed != nil:
		blob, err := encodeAutoscalerStatus(change.Autoscaler.Seed)
		if err != nil {
			return "", nil, err
		}
		columns, args = append(columns, "autoscaler = ?"), append(args, blob)
	}
	columns, args = append(columns, "modification_tag_index = ?", "updated_at = ?"), append(args, int64(before.ModificationTag.Index)+1, now)
	if c.definition != nil {
		columns = append(columns, "active_definition_id = ?")
		args = append(args, change.ActiveDefinitionID)
	}
	return strings.Join(columns, ", "), args, nil
}

// updatedRow is the LRP as stored after applyUpdate wrote update over
// before. An update that sends no definition leaves the active one, so
// when before carries it (lockDesiredForUpdate read it) the row is before
// with the written columns, each decoded from what was stored as a read
// would decode it, and the tag moved on: no read. Otherwise the row is
// read.
func (s *SQLDB) updatedRow(ctx context.Context, tx *sql.Tx, before *models.DesiredLRP, update *models.DesiredLRPUpdate,
	c *desiredChange, change models.UpdateChange) (*models.DesiredLRP, error) {
	if c.definition != nil || before.Definition == nil {
		return s.desiredLRP(ctx, tx, before.ProcessGuid)
	}
	after := proto.Clone(before).(*models.DesiredLRP)
	if c.routes != nil {
		after.Routes = c.storedRoutes
	}
	if update.Annotation != nil {
		after.Annotation = *update.Annotation
	}
	if update.UpdateStrategy != nil {
		after.UpdateStrategy = c.storedStrategy
	}
	if update.DisruptionBudget != nil {
		after.DisruptionBudget = decodeDisruptionBudget(encodeDisruptionBudget(update.DisruptionBudget))
	}
	if change.Instances != nil {
		after.Instances = *change.Instances
	}
	if update.Autoscaling != nil {
		after.Autoscaling = c.storedAutoscaling
	}
	switch {
	case change.Autoscaler.Clear:
		after.Autoscaler = nil
	case change.Autoscaler.Seed != nil:
		blob, err := encodeAutoscalerStatus(change.Autoscaler.Seed)
		if err != nil {
			return nil, err
		}
		if after.Autoscaler, err = decodeAutoscalerStatus(blob); err != nil {
			return nil, err
		}
	}
	after.ModificationTag.Index++
	return after, nil
}

// lockedDesired is the LRP as an update reads it, locked
// (lockDesiredForUpdate).
type lockedDesired struct {
	lrp *models.DesiredLRP // with its active definition
	// lastSequence is the LRP's highest operation number.
	lastSequence int64
	// unfinished: the LRP has operations that have not ended.
	unfinished bool
}

// lockDesiredForUpdate reads the LRP with its active definition, locking
// its row as lockDesiredLRP does, then what the update's operation needs:
// the LRP's highest operation number and whether any of its operations
// has not ended. Those are a second statement, after the lock: a
// statement that waited for the lock sees the locked row as the writer it
// waited for left it, but its subqueries see the rows as they were when
// it started (Postgres's read committed), and would miss the operation
// that writer recorded. The definition may come with the lock all the
// same: a definition row never changes once stored, and one the statement
// cannot see yet comes back NULL, which updatedRow reads again.
func (s *SQLDB) lockDesiredForUpdate(ctx context.Context, tx *sql.Tx, processGuid string) (*lockedDesired, error) {
	lrp, err := s.scanDesiredLRP(s.queryRow(ctx, tx, selectDesiredForUpdate+s.driver.lockForUpdate(), processGuid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound("desired_lrp %q not found", processGuid)
	}
	if err != nil {
		return nil, err
	}
	locked := &lockedDesired{lrp: lrp}
	var unfinished int64
	if err := s.queryRow(ctx, tx, selectOperationsToFollow, processGuid, processGuid).Scan(&locked.lastSequence, &unfinished); err != nil {
		return nil, err
	}
	locked.unfinished = unfinished > 0
	return locked, nil
}

const selectDesiredForUpdate = `SELECT ` + desiredRowColumns + `,
 (SELECT r.definition FROM run_infos r WHERE r.process_guid = d.process_guid AND r.definition_id = d.active_definition_id)
 FROM desired_lrps d WHERE d.process_guid = ?`

// selectOperationsToFollow is an LRP's highest operation number and how
// many of its operations have not ended.
const selectOperationsToFollow = `SELECT (SELECT COALESCE(MAX(o.sequence), 0) FROM operations o WHERE o.process_guid = ?),
 (SELECT COUNT(*) FROM operations o WHERE o.process_guid = ? AND ` + operationsUnended + `)`

// lockDesiredLRP reads the LRP without its definition, locking its row so
// that concurrent writers of the LRP queue behind this transaction.
func (s *SQLDB) lockDesiredLRP(ctx context.Context, tx *sql.Tx, processGuid string) (*models.DesiredLRP, error) {
	return s.readDesiredLRPOnly(ctx, tx, processGuid, s.driver.lockForUpdate())
}

// readDesiredLRPOnly reads the LRP without its definition; lock is "" or
// the dialect's FOR UPDATE. A missing LRP is ResourceNotFound.
func (s *SQLDB) readDesiredLRPOnly(ctx context.Context, q queryer, processGuid, lock string) (*models.DesiredLRP, error) {
	lrp, err := s.scanDesiredLRP(s.queryRow(ctx, q, selectDesiredLRPOnly+" WHERE d.process_guid = ?"+lock, processGuid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound("desired_lrp %q not found", processGuid)
	}
	return lrp, err
}

// selectDesiredLRPOnly is selectDesiredLRP without the definition: a NULL
// in its place keeps the columns scanDesiredLRP expects.
const selectDesiredLRPOnly = `SELECT ` + desiredRowColumns + `, NULL
 FROM desired_lrps d`

// scale adds or deletes UNCLAIMED ORDINARY instances for a new instance
// count and returns the events of the instances it added or deleted.
func (s *SQLDB) scale(ctx context.Context, tx *sql.Tx, processGuid, domain, activeID string, from, to int32, now int64) ([]models.Event, error) {
	switch {
	case to > from:
		created, err := s.insertUnclaimed(ctx, tx, processGuid, domain, activeID, from, to, now)
		if err != nil {
			return nil, err
		}
		events := make([]models.Event, len(created))
		for i, lrp := range created {
			events[i] = models.ActualLRPCreated(lrp)
		}
		return events, nil
	case to < from:
		return s.deleteActualLRPs(ctx, tx, `process_guid = ? AND presence = ? AND state = ? AND instance_index >= ?`,
			processGuid, presenceOrdinary, stateUnclaimed, to)
	}
	return nil, nil
}

func staleTag(processGuid string) error {
	return models.NewError(models.Error_ResourceConflict,
		"desired_lrp %q: modification_tag is stale; read the LRP again and retry", processGuid)
}
