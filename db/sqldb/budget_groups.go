package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.BudgetGroupDB = (*SQLDB)(nil)

// Budget groups (table budget_groups, migration 0027): one row per group,
// keyed by name. A group belongs to no LRP, so setting or removing one
// records no operation (operations are each LRP's numbered log); each
// write logs a budget_group_changed event instead, naming who asked, and a
// group keeps who last set it (requested_by), as freeze windows do. The
// planner reads the whole table every pass (BudgetGroups): a handful of
// rows. An LRP names its group in desired_lrps.budget_group; nothing ties
// the two, so a group can be set before or after its LRPs name it.

// maxBudgetGroupBy is the width of budget_groups.requested_by, migration
// 0027.
const maxBudgetGroupBy = 256

const budgetGroupColumns = `name, max_unavailable, requested_by, created_at, updated_at`

// SetBudgetGroup stores g, valid as models.ValidateBudgetGroup checks:
// new, stamped created and updated with the board's time, or replacing the
// group of its name (its created_at kept). It logs budget_group_changed.
// Setting a group to what it is already changes nothing and logs nothing.
func (s *SQLDB) SetBudgetGroup(ctx context.Context, g *models.BudgetGroup, requestedBy string) (*models.BudgetGroup, error) {
	if g == nil {
		return nil, errInvalid("group", "required")
	}
	stored := &models.BudgetGroup{Name: g.GetName(), MaxUnavailable: g.GetMaxUnavailable()}
	if err := models.ValidateBudgetGroup("group", stored); err != nil {
		return nil, err
	}
	// Who asked is the board's record, not the client's input: cut to the
	// column's width (a long X-Corkboard-Requested-By or User-Agent, plus
	// " from <address>"), as a quarantine's is, rather than refused.
	requestedBy = models.CutText(requestedBy, maxBudgetGroupBy)
	err := s.transactPublishing(ctx, "set budget group", func(tx *sql.Tx) ([]models.Event, error) {
		existing, err := s.readBudgetGroup(ctx, tx, stored.Name, s.driver.lockForUpdate())
		if err != nil {
			return nil, err
		}
		now := s.now().UnixNano()
		stored.UpdatedAt, stored.RequestedBy = now, requestedBy
		if existing == nil {
			stored.CreatedAt = now
			_, err = s.exec(ctx, tx, insertStatement("budget_groups", []string{"name", "max_unavailable", "requested_by", "created_at", "updated_at"}),
				stored.Name, stored.MaxUnavailable, stored.RequestedBy, stored.CreatedAt, stored.UpdatedAt)
			if isUniqueViolation(err) {
				return nil, models.NewError(models.Error_ResourceConflict, "budget group %q was set at the same time: try again", stored.Name)
			}
			if err != nil {
				return nil, err
			}
			return []models.Event{models.BudgetGroupChanged(nil, stored, requestedBy)}, nil
		}
		if existing.MaxUnavailable == stored.MaxUnavailable {
			stored = existing
			return nil, nil
		}
		stored.CreatedAt = existing.CreatedAt
		if err := s.execOne(ctx, tx, "UPDATE budget_groups SET max_unavailable = ?, requested_by = ?, updated_at = ? WHERE name = ?",
			stored.MaxUnavailable, stored.RequestedBy, stored.UpdatedAt, stored.Name); err != nil {
			return nil, err
		}
		return []models.Event{models.BudgetGroupChanged(existing, stored, requestedBy)}, nil
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// RemoveBudgetGroup deletes the group name and logs budget_group_changed
// naming requestedBy; a name not stored is ResourceNotFound.
func (s *SQLDB) RemoveBudgetGroup(ctx context.Context, name, requestedBy string) error {
	if err := (&models.RemoveBudgetGroupRequest{Name: name}).Validate(); err != nil {
		return err
	}
	return s.transactPublishing(ctx, "remove budget group", func(tx *sql.Tx) ([]models.Event, error) {
		existing, err := s.readBudgetGroup(ctx, tx, name, s.driver.lockForUpdate())
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, errNotFound("budget group %q not found", name)
		}
		if err := s.execOne(ctx, tx, "DELETE FROM budget_groups WHERE name = ?", name); err != nil {
			return nil, err
		}
		return []models.Event{models.BudgetGroupChanged(existing, nil, requestedBy)}, nil
	})
}

// BudgetGroups lists every group in name order (bytes).
func (s *SQLDB) BudgetGroups(ctx context.Context) ([]*models.BudgetGroup, error) {
	var groups []*models.BudgetGroup
	err := s.eachRow(ctx, s.conn, "SELECT "+budgetGroupColumns+" FROM budget_groups", nil, func(rows *sql.Rows) error {
		g, err := scanBudgetGroup(rows)
		if err != nil {
			return err
		}
		groups = append(groups, g)
		return nil
	})
	if err != nil {
		return nil, asModelError("list budget groups", err)
	}
	// Sorted here, not in SQL, so every dialect's collation gives one order.
	slices.SortFunc(groups, func(a, b *models.BudgetGroup) int { return strings.Compare(a.Name, b.Name) })
	return groups, nil
}

// readBudgetGroup reads the group name, nil when there is none; lock is ""
// or the dialect's FOR UPDATE.
func (s *SQLDB) readBudgetGroup(ctx context.Context, q queryer, name, lock string) (*models.BudgetGroup, error) {
	g, err := scanBudgetGroup(s.queryRow(ctx, q, "SELECT "+budgetGroupColumns+" FROM budget_groups WHERE name = ?"+lock, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return g, err
}

func scanBudgetGroup(row rowScanner) (*models.BudgetGroup, error) {
	g := &models.BudgetGroup{}
	if err := row.Scan(&g.Name, &g.MaxUnavailable, &g.RequestedBy, &g.CreatedAt, &g.UpdatedAt); err != nil {
		return nil, err
	}
	return g, nil
}
