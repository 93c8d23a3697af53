package db

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/models"
)

// OperationDB reads the operation log and acts on it. Every write to a
// DesiredLRP (DesireLRP, UpdateDesiredLRP, RemoveDesiredLRP, Rollback,
// AbortRollout, CancelOperation) records its operation in the same
// transaction as the change, and emits operation_changed for it and for
// every operation the change ended. A write that fails records nothing.
//
// What each write records (kind, status):
//
//   - DesireLRP: DESIRE, FINISHED.
//   - UpdateDesiredLRP without a change of the active definition: UPDATE,
//     FINISHED.
//   - UpdateDesiredLRP that activates a definition, Rollback, AbortRollout:
//     UPDATE_DEFINITION / ROLLBACK / ABORT, IN_PROGRESS until its rollout
//     ends (convergence finishes it), its lease given to the convergence
//     lease owner of the moment (none when nobody owns it). It supersedes
//     the LRP's operation in progress and those pending: they end CANCELED,
//     "superseded by operation <id> (#<sequence>)". The rollout record
//     written with it carries its id.
//   - UpdateDesiredLRP with a new definition and queue set, while a change
//     of definition is IN_PROGRESS: UPDATE_DEFINITION, PENDING. The
//     definition is stored, nothing else changes; convergence starts the
//     operation when its turn comes (OperationWrite.Start).
//   - UpdateDesiredLRP with a new definition and validate: VALIDATE,
//     IN_PROGRESS (PENDING behind an operation that has not ended). The
//     definition is stored, nothing else changes; convergence validates
//     the definition with one instance and then applies the update
//     (OperationWrite.Start), or ends the operation in ERROR. It
//     supersedes nothing.
//   - RemoveDesiredLRP: REMOVE, FINISHED. The LRP's operation in progress
//     ends CANCELED and those pending EVICTED, naming it.
//
// Operation sequence numbers of one LRP are 1, 2, 3, … in creation order,
// distinct under concurrent writes.
type OperationDB interface {
	// Operations lists operations newest first, filtered, at most
	// filter.Limit (models.DefaultOperationsPage when 0) of them, and the
	// cursor of the next page ("" on the last page).
	Operations(ctx context.Context, filter OperationFilter) ([]*models.Operation, string, error)
	// Operation returns one operation; ResourceNotFound when there is none.
	Operation(ctx context.Context, id string) (*models.Operation, error)
	// CancelOperation cancels an operation: a PENDING one ends CANCELED;
	// an IN_PROGRESS change of definition is aborted — an ABORT operation
	// rolls the LRP back to its healthy definition, and the canceled one
	// ends CANCELED naming it (when the healthy definition is the active
	// one already, it just ends CANCELED). An operation that has ended is
	// InvalidStateTransition; an unknown id ResourceNotFound.
	CancelOperation(ctx context.Context, id string) (*models.Operation, error)
	// PruneOperations deletes up to limit ended operations that finished
	// before before, keeping each LRP's newest keepPerLRP operations
	// whatever their age, and returns how many it deleted.
	PruneOperations(ctx context.Context, before time.Time, keepPerLRP, limit int) (int, error)
}

// OperationFilter narrows an operations listing; zero values match
// everything. Cursor is the next-page cursor of the page before.
type OperationFilter struct {
	ProcessGuid string
	Status      models.Operation_Status
	Kind        models.Operation_Kind
	Cursor      string
	Limit       int
}

// OperationNote carries what a write records in its operation beyond the
// request itself: who asked (set by the caller), and the operation the
// write recorded (set by the store). A handler attaches one to the
// context of each write with WithOperationNote; a write without one
// records its operation all the same, with requested_by empty.
type OperationNote struct {
	RequestedBy string
	// Operation is the operation the write recorded, once it committed.
	Operation *models.Operation
	// Warning, set by the store, is what the caller should be told about
	// a write that went ahead: a rollback to a definition not known to run.
	Warning string
}

type operationNoteKey struct{}

// WithOperationNote returns ctx carrying note.
func WithOperationNote(ctx context.Context, note *OperationNote) context.Context {
	return context.WithValue(ctx, operationNoteKey{}, note)
}

// OperationNoteFrom returns the note ctx carries, or nil.
func OperationNoteFrom(ctx context.Context) *OperationNote {
	note, _ := ctx.Value(operationNoteKey{}).(*OperationNote)
	return note
}
