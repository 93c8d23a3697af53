package models

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"
)

// Operation statuses move only along Maestro's edges:
//
//	PENDING → IN_PROGRESS → FINISHED | ERROR | CANCELED
//	PENDING → EVICTED | CANCELED
//
// A status never changes once the operation ended.
var operationTransitions = map[Operation_Status][]Operation_Status{
	Operation_PENDING:     {Operation_IN_PROGRESS, Operation_EVICTED, Operation_CANCELED},
	Operation_IN_PROGRESS: {Operation_FINISHED, Operation_ERROR, Operation_CANCELED},
}

// CheckOperationTransition reports whether an operation may move from one
// status to another, as an InvalidStateTransition error naming both.
func CheckOperationTransition(from, to Operation_Status) error {
	for _, next := range operationTransitions[from] {
		if next == to {
			return nil
		}
	}
	if OperationEnded(from) {
		return NewError(Error_InvalidStateTransition, "operation is %s: it has ended and cannot become %s", from, to)
	}
	return NewError(Error_InvalidStateTransition, "operation is %s and cannot become %s", from, to)
}

// OperationEnded reports whether status is one an operation ends in.
func OperationEnded(status Operation_Status) bool {
	switch status {
	case Operation_FINISHED, Operation_ERROR, Operation_CANCELED, Operation_EVICTED:
		return true
	}
	return false
}

// operationIDPattern: 16 hex digits of the creation time in Unix
// nanoseconds, then 8 random hex digits, so that ids sort by creation.
const operationIDPattern = `^[0-9a-f]{24}$`

var operationIDRegexp = regexp.MustCompile(operationIDPattern)

// NewOperationID returns a fresh operation id for an operation created at
// at.
func NewOperationID(at time.Time) string {
	var random [4]byte
	if _, err := rand.Read(random[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return OperationIDFloor(at) + hex.EncodeToString(random[:])
}

// OperationIDFloor is the time part of the ids of operations created at
// at: every operation created before at has an id that sorts below it, and
// every one created at or after at one that sorts above.
func OperationIDFloor(at time.Time) string {
	return fmt.Sprintf("%016x", uint64(at.UnixNano()))
}

func validateOperationID(path, id string) error {
	if id == "" {
		return ErrInvalidField(path, "required")
	}
	if !operationIDRegexp.MatchString(id) {
		return ErrInvalidField(path, "must match "+operationIDPattern+", got "+quoteShort(id))
	}
	return nil
}

// MaxOperationsPage is the most operations one list call answers.
const MaxOperationsPage = 1000

// DefaultOperationsPage is the page size when the request sets none.
const DefaultOperationsPage = 100

// Validate accepts the filters of an operations listing: a valid
// process_guid, a known status and kind (or none), a cursor that is an
// operation id, and a limit of 0 (the default) to MaxOperationsPage.
func (r *OperationsRequest) Validate() error {
	if r.GetProcessGuid() != "" {
		if err := validateProcessGuid("process_guid", r.GetProcessGuid()); err != nil {
			return err
		}
	}
	if _, ok := Operation_Status_name[int32(r.GetStatus())]; !ok {
		return ErrInvalidField("status", fmt.Sprintf("unknown status %d", r.GetStatus()))
	}
	if _, ok := Operation_Kind_name[int32(r.GetKind())]; !ok {
		return ErrInvalidField("kind", fmt.Sprintf("unknown kind %d", r.GetKind()))
	}
	if r.GetCursor() != "" {
		if err := validateOperationID("cursor", r.GetCursor()); err != nil {
			return err
		}
	}
	if r.GetLimit() < 0 || r.GetLimit() > MaxOperationsPage {
		return ErrInvalidField("limit", fmt.Sprintf("must be between 0 (the default, %d) and %d, got %d", DefaultOperationsPage, MaxOperationsPage, r.GetLimit()))
	}
	return nil
}

// Validate requires a valid operation id.
func (r *OperationRequest) Validate() error {
	return validateOperationID("id", r.GetId())
}

// Validate requires a valid operation id.
func (r *CancelOperationRequest) Validate() error {
	return validateOperationID("id", r.GetId())
}
