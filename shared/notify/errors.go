package notify

import (
	"errors"
	"fmt"
)

// Sentinel errors of the core. Adapters wrap them with the operation that failed, so callers
// test with errors.Is.
var (
	// ErrNotFound means no record exists for the idempotency key.
	ErrNotFound = errors.New("notification not found")
	// ErrKeyReuse means the idempotency key is already bound to a request with another
	// fingerprint.
	ErrKeyReuse = errors.New("idempotency key reused with a different request")
	// ErrConflict means a conditional write lost: the record's version moved on, or the
	// dispatch deadline passed before the lease could be taken.
	ErrConflict = errors.New("notification changed concurrently or deadline passed")
	// ErrInvalidTransition means the transition table refuses the move.
	ErrInvalidTransition = errors.New("transition not allowed")
	// ErrNotCancellable means the record has left the states a caller may cancel from.
	ErrNotCancellable = errors.New("notification can no longer be cancelled")
)

// ConflictError is an ErrConflict that carries the record as it stood when the conditional
// write lost, as the store read it back from the failed write itself (DynamoDB's
// ReturnValuesOnConditionCheckFailure), so the caller can act on it without another read.
type ConflictError struct {
	Current Record
}

// Error says which record and version won.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s (stored: %s v%d %s)", ErrConflict, e.Current.IdempotencyKey, e.Current.Version, e.Current.State)
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// CurrentOf returns the record a *ConflictError in err's chain carries.
func CurrentOf(err error) (Record, bool) {
	var ce *ConflictError
	if errors.As(err, &ce) {
		return ce.Current, true
	}
	return Record{}, false
}
