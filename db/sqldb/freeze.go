package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.FreezeDB = (*SQLDB)(nil)

// Freeze windows (table freeze_windows, migration 0021): one row per window,
// keyed by name, spec the protobuf of its models.FreezeWindow. A window
// belongs to no LRP, so adding or removing one records no operation
// (operations are each LRP's numbered log); each write logs a
// freeze_changed event instead, naming who asked, and a window keeps who
// added it (requested_by). The
// planner reads the whole table every pass (FreezeWindows): a handful of
// rows, so no board keeps a copy to go stale.

// AddFreezeWindow stores w, valid as models.ValidateFreezeWindow checks,
// stamped with the board's time and requestedBy, and logs freeze_changed.
// A window of that name already stored is ResourceExists and changes
// nothing.
func (s *SQLDB) AddFreezeWindow(ctx context.Context, w *models.FreezeWindow, requestedBy string) (*models.FreezeWindow, error) {
	if w == nil {
		return nil, errInvalid("window", "required")
	}
	stored := proto.Clone(w).(*models.FreezeWindow)
	if err := models.ValidateFreezeWindow("window", stored); err != nil {
		return nil, err
	}
	err := s.transactPublishing(ctx, "add freeze window", func(tx *sql.Tx) ([]models.Event, error) {
		existing, err := s.readFreezeWindow(ctx, tx, stored.Name)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			return nil, models.NewError(models.Error_ResourceExists, "freeze window %q already exists", stored.Name)
		}
		stored.CreatedAt = s.now().UnixNano()
		stored.RequestedBy = requestedBy
		spec, err := encodeMessage(stored, false)
		if err != nil {
			return nil, errInvalid("window", err.Error())
		}
		_, err = s.exec(ctx, tx, insertStatement("freeze_windows", []string{"name", "spec", "created_at"}), stored.Name, spec, stored.CreatedAt)
		if isUniqueViolation(err) {
			return nil, models.NewError(models.Error_ResourceExists, "freeze window %q already exists", stored.Name)
		}
		if err != nil {
			return nil, err
		}
		return []models.Event{models.FreezeChanged(nil, stored, requestedBy)}, nil
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// RemoveFreezeWindow deletes the window name and logs freeze_changed
// naming requestedBy; a name not stored is ResourceNotFound.
func (s *SQLDB) RemoveFreezeWindow(ctx context.Context, name, requestedBy string) error {
	if err := (&models.RemoveFreezeWindowRequest{Name: name}).Validate(); err != nil {
		return err
	}
	return s.transactPublishing(ctx, "remove freeze window", func(tx *sql.Tx) ([]models.Event, error) {
		existing, err := s.readFreezeWindow(ctx, tx, name)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, errNotFound("freeze window %q not found", name)
		}
		if err := s.execOne(ctx, tx, "DELETE FROM freeze_windows WHERE name = ?", name); err != nil {
			return nil, err
		}
		return []models.Event{models.FreezeChanged(existing, nil, requestedBy)}, nil
	})
}

// FreezeWindows lists every window in name order (bytes), and the board's
// time of the read.
func (s *SQLDB) FreezeWindows(ctx context.Context) ([]*models.FreezeWindow, time.Time, error) {
	now := s.now()
	var windows []*models.FreezeWindow
	err := s.eachRow(ctx, s.conn, "SELECT name, spec FROM freeze_windows", nil, func(rows *sql.Rows) error {
		w, err := scanFreezeWindow(rows)
		if err != nil {
			return err
		}
		windows = append(windows, w)
		return nil
	})
	if err != nil {
		return nil, time.Time{}, asModelError("list freeze windows", err)
	}
	// Sorted here, not in SQL, so every dialect's collation gives one order.
	slices.SortFunc(windows, func(a, b *models.FreezeWindow) int { return strings.Compare(a.Name, b.Name) })
	return windows, now, nil
}

// readFreezeWindow reads the window name, nil when there is none.
func (s *SQLDB) readFreezeWindow(ctx context.Context, q queryer, name string) (*models.FreezeWindow, error) {
	w, err := scanFreezeWindow(s.queryRow(ctx, q, "SELECT name, spec FROM freeze_windows WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return w, err
}

func scanFreezeWindow(row rowScanner) (*models.FreezeWindow, error) {
	var name string
	var spec []byte
	if err := row.Scan(&name, &spec); err != nil {
		return nil, err
	}
	w := &models.FreezeWindow{}
	if err := proto.Unmarshal(spec, w); err != nil {
		return nil, errInvalidRecord("freeze window %q: %v", name, err)
	}
	w.Name = name
	return w, nil
}
