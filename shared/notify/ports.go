package notify

import (
	"context"
	"time"
)

// Store keeps notification records. Every write is conditional; the store never decides a
// transition, it only applies one that Record.Apply produced.
type Store interface {
	// Admit writes rec if no record holds its key, as one conditional put. It returns the
	// stored record and whether this call created it; on a conflict the stored record is the
	// existing one, returned by the same call.
	Admit(ctx context.Context, rec Record) (stored Record, created bool, err error)
	// Get returns the record for key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) (Record, error)
	// Transition replaces prev by next in one conditional write: it succeeds only if the
	// stored version is still prev.Version and, when next takes the lease, the dispatch
	// deadline is still after next.UpdatedAt. Otherwise it returns an error wrapping
	// ErrConflict.
	Transition(ctx context.Context, prev, next Record) error
	// Reschedule writes next's NextActionAt and RequeuedAt over prev without a transition (the
	// version stays), in one conditional write that succeeds only if the stored version and
	// next_action_at are still prev's; otherwise it returns an error wrapping ErrConflict.
	// Whoever wins it is the one that sends the replacement queue message.
	Reschedule(ctx context.Context, prev, next Record) error
	// Settle marks rec, undecided, counted and admitted by the guard, as decided at at
	// (DecidedAt), without a transition, in one conditional write that succeeds only if the
	// stored record is still rec's version, accepted and not marked. It returns the marked
	// record, or an error wrapping a *ConflictError holding the stored record (refused,
	// marked by another request that counted it too, or moved on). Transition to StateRefused
	// is conditioned on the record not being marked, so of a refusal and a mark exactly one
	// wins (see Decider).
	Settle(ctx context.Context, rec Record, at time.Time) (Record, error)
}

// Sealer encrypts a request's secret part, bound to its idempotency key.
type Sealer interface {
	Seal(ctx context.Context, key string, s Secret) ([]byte, error)
}

// Opener decrypts what a Sealer sealed under the same key.
type Opener interface {
	Open(ctx context.Context, key string, sealed []byte) (Secret, error)
}

// DestinationHasher returns the keyed fingerprint of an E.164 number, safe to store and audit.
type DestinationHasher interface {
	DestinationFP(e164 string) string
}

// RequestHasher computes the request fingerprint stored on a record: a keyed hash of the
// request's canonical form (Request.Canonical). An unkeyed hash would let anyone who can read
// the table, and knows a customer's number and the record's plain fields, recover a short code
// by hashing every candidate.
type RequestHasher interface {
	// RequestFP returns the fingerprint to store for canonical.
	RequestFP(canonical []byte) string
	// SameRequest reports whether stored, a fingerprint read from a record, was computed
	// from canonical.
	SameRequest(stored string, canonical []byte) bool
}

// Message is all a queue ever carries: which record, and which version of it was current.
type Message struct {
	IdempotencyKey string `json:"idempotency_key"`
	NotificationID string `json:"notification_id"`
	Version        int64  `json:"version"`
}

// MessageOf returns the queue message that points at rec.
func MessageOf(rec Record) Message {
	return Message{IdempotencyKey: rec.IdempotencyKey, NotificationID: rec.NotificationID, Version: rec.Version}
}

// QueueName names a worker queue.
type QueueName string

// The worker queues: intake and the workers hand records to dispatch, and the dispatch worker
// and the sweeper hand them to reconciliation.
const (
	DispatchQueue  QueueName = "dispatch"
	ReconcileQueue QueueName = "reconcile"
)

// MaxQueueDelay is the longest delay a Queue honours: SQS's limit on DelaySeconds (900). A
// longer wait is sent as MaxQueueDelay; the message then finds the record not yet due and
// re-schedules the rest, and the sweeper finds it through next_action_at if a message is lost.
const MaxQueueDelay = 15 * time.Minute

// Queue puts a record's message on a worker queue. It is the one port for it: intake hands a
// new record to dispatch, the workers hand records on to each other.
type Queue interface {
	// Enqueue puts m on queue, visible after delay (0: at once). Delays above MaxQueueDelay
	// are sent as MaxQueueDelay. An implementation may round a delay up to its unit, never
	// down, so a message never arrives before the record is due.
	Enqueue(ctx context.Context, queue QueueName, m Message, delay time.Duration) error
}

// MessageChecker reports whether the message for a request can be rendered within the SMS
// segment budget. Service asks it before admission, so a request that could never be sent is
// refused with 400 instead of being admitted and left to expire.
type MessageChecker interface {
	Check(purpose, locale string, params map[string]string) error
}
