package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

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
//     instances are left for convergence to retire.
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
//
// Concurrent updates of one LRP queue on its row: it is read with a row lock
// (SQLite has one writer at a time anyway), so a second update sees the
// first one's result, and a tag it carried from before is stale:
// ResourceConflict. The write itself is also a compare-and-set on the tag;
// should it match no row all the same, an update that carried a tag fails
// with ResourceConflict and one without is re-run on the fresh row, a
// bounded number of times.
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
	var updated *models.DesiredLRP
	err = s.transactPublishing(ctx, "update desired lrp", func(tx *sql.Tx) ([]models.Event, error) {
		var events []models.Event
		var err error
		updated, events, err = s.applyUpdate(ctx, tx, processGuid, update, change)
		return events, err
	})
	if err != nil {
		return nil, err
	}
	return updated, nil
}

// desiredChange is the part of an update that can be encoded before the
// transaction starts.
type desiredChange struct {
	columns    []string // "column = ?" assignments
	args       []any
	definition *models.LRPDefinition // with its id set; created_at set per attempt
}

func (s *SQLDB) prepareUpdate(update *models.DesiredLRPUpdate) (*desiredChange, error) {
	c := &desiredChange{}
	if update.Instances != nil {
		c.columns = append(c.columns, "instances = ?")
		c.args = append(c.args, *update.Instances)
	}
	if update.Routes != nil {
		routes, err := encodeRoutes(update.Routes)
		if err != nil {
			return nil, errInvalid("update.routes", err.Error())
		}
		c.columns = append(c.columns, "routes = ?")
		c.args = append(c.args, routes)
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

// applyUpdate writes the update and returns the LRP as stored afterwards
// with the events: desired_lrp_changed, then actual_lrp_created or
// actual_lrp_removed for each instance a scale added or deleted.
func (s *SQLDB) applyUpdate(ctx context.Context, tx *sql.Tx, processGuid string, update *models.DesiredLRPUpdate, c *desiredChange) (*models.DesiredLRP, []models.Event, error) {
	before, err := s.lockDesiredLRP(ctx, tx, processGuid)
	if err != nil {
		return nil, nil, err
	}
	epoch, tagIndex := before.ModificationTag.Epoch, int64(before.ModificationTag.Index)
	if tag := update.ModificationTag; tag != nil && (tag.Epoch != epoch || int64(tag.Index) != tagIndex) {
		return nil, nil, staleTag(processGuid)
	}

	now := s.now().UnixNano()
	activeID := before.ActiveDefinitionId
	columns := append(slices.Clone(c.columns), "modification_tag_index = ?", "updated_at = ?")
	args := append(slices.Clone(c.args), tagIndex+1, now)
	if c.definition != nil {
		activeID = c.definition.DefinitionId
		columns = append(columns, "active_definition_id = ?")
		args = append(args, activeID)
	}
	args = append(args, processGuid, epoch, tagIndex)
	res, err := s.exec(ctx, tx, "UPDATE desired_lrps SET "+strings.Join(columns, ", ")+
		" WHERE process_guid = ? AND modification_tag_epoch = ? AND modification_tag_index = ?", args...)
	if err != nil {
		return nil, nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, nil, err
	} else if n == 0 {
		if update.ModificationTag != nil {
			return nil, nil, staleTag(processGuid)
		}
		return nil, nil, errLostRace
	}

	var rollout *rolloutRecord
	if c.definition != nil {
		def := proto.Clone(c.definition).(*models.LRPDefinition)
		def.CreatedAt = now
		if _, err := s.putDefinition(ctx, tx, processGuid, def); err != nil {
			return nil, nil, err
		}
		if activeID != before.ActiveDefinitionId {
			reason := fmt.Sprintf("rolling from %s to %s", before.ActiveDefinitionId, activeID)
			if rollout, err = s.startRollout(ctx, tx, processGuid, activeID, reason, now); err != nil {
				return nil, nil, err
			}
		}
	}
	var scaled []models.Event
	if update.Instances != nil {
		scaled, err = s.scale(ctx, tx, processGuid, before.Domain, activeID, before.Instances, *update.Instances, now)
		if err != nil {
			return nil, nil, err
		}
	}
	after, err := s.desiredLRP(ctx, tx, processGuid)
	if err != nil {
		return nil, nil, err
	}
	events := append([]models.Event{models.DesiredLRPChanged(before, after)}, scaled...)
	if rollout != nil {
		status, err := s.rolloutStatus(ctx, tx, processGuid, after, rollout)
		if err != nil {
			return nil, nil, err
		}
		events = append(events, models.RolloutChanged(status))
	}
	return after, events, nil
}

// lockDesiredLRP reads the LRP without its definition, locking its row so
// that concurrent writers of the LRP queue behind this transaction.
func (s *SQLDB) lockDesiredLRP(ctx context.Context, tx *sql.Tx, processGuid string) (*models.DesiredLRP, error) {
	return s.readDesiredLRPOnly(ctx, tx, processGuid, s.dialect.lockForUpdate())
}

// readDesiredLRPOnly reads the LRP without its definition; lock is "" or
// the dialect's FOR UPDATE. A missing LRP is ResourceNotFound.
func (s *SQLDB) readDesiredLRPOnly(ctx context.Context, q queryer, processGuid, lock string) (*models.DesiredLRP, error) {
	lrp, err := scanDesiredLRP(s.queryRow(ctx, q, selectDesiredLRPOnly+" WHERE d.process_guid = ?"+lock, processGuid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound("desired_lrp %q not found", processGuid)
	}
	return lrp, err
}

// selectDesiredLRPOnly is selectDesiredLRP without the definition: a NULL
// in its place keeps the columns scanDesiredLRP expects.
const selectDesiredLRPOnly = `SELECT d.process_guid, d.domain, d.instances, d.placement_tags, d.routes,
 d.annotation, d.active_definition_id, d.healthy_definition_id, d.update_strategy,
 d.modification_tag_epoch, d.modification_tag_index, d.created_at, NULL
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
