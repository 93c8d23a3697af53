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
//     lease holder of the moment (none when nobody holds it). It supersedes
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

// OperationRow is an operation that has not ended, as convergence sees it.
type OperationRow struct {
	ID          string
	ProcessGuid string
	Sequence    int64
	Kind        models.Operation_Kind
	// Status is PENDING or IN_PROGRESS.
	Status models.Operation_Status
	// DefinitionID is the definition a change of definition activates;
	// DefinitionStored reports whether it is still stored (a PENDING
	// operation whose definition cleanup deleted cannot run).
	DefinitionID     string
	DefinitionStored bool
	// The resources of that definition (0 when it is not stored): a
	// validation instance of it needs them placed.
	MemoryMB int32
	DiskMB   int32
	// The lease of an IN_PROGRESS operation: its holder ("" for none) and
	// when it expires, Unix nanoseconds.
	LeaseOwner     string
	LeaseExpiresAt int64
	CreatedAt      int64
	// ModificationIndex grows by one with every write of the operation;
	// OperationWrite is compare-and-set on it.
	ModificationIndex int64
}

// OperationWrite changes an operation that has not ended. It applies only
// if the operation still has ExpectModificationIndex; otherwise it is
// skipped like a stale row write. Every applied write emits
// operation_changed.
type OperationWrite struct {
	ID                      string
	ProcessGuid             string
	ExpectModificationIndex int64
	// Status, when set, is the status the operation moves to (allowed by
	// models.CheckOperationTransition), with Reason; the store stamps
	// started_at on IN_PROGRESS and finished_at on an ending status.
	Status models.Operation_Status
	Reason string
	// History lines to append, stamped with the time of the write.
	History []string
	// LeaseOwner, when set, takes (or renews) the lease until
	// LeaseExpiresAt.
	LeaseOwner     string
	LeaseExpiresAt int64
	// Start applies the request a PENDING operation holds, as the API
	// would have when it arrived: it activates the operation's definition
	// (and the rest of the update), writes the rollout record with the
	// operation's id, and moves the operation to IN_PROGRESS (FINISHED when
	// the definition is already the active one), leased to LeaseOwner.
	// A VALIDATE operation (an update with validate) starts in two steps:
	// from PENDING its validation starts (IN_PROGRESS, nothing applied);
	// once validated, a Start of the IN_PROGRESS operation applies it.
	// Status is ignored with Start.
	Start bool
	// FailedValidation says the write ends a VALIDATE operation in ERROR
	// because validation refused its definition: the store records that
	// the definition failed validation (models.DefinitionSummary), so that
	// a plain rollback never goes to it (models.RollbackTarget).
	FailedValidation bool
}
