package notify

import "errors"

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
