package providerevents

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// ErrPoison means an event cannot be turned into a receipt: it is not what the source sends,
// or it names no attempt of ours. A poison event is acknowledged and counted, never retried.
// Errors wrapping it say what was wrong in general terms, never with the event's content.
var ErrPoison = errors.New("malformed provider event")

// Receipt is one delivery event for one attempt, as provider-events records it. It holds no
// phone number and no message body.
type Receipt struct {
	// AttemptRef is the attempt's client reference, <notification_id>-a<N>.
	AttemptRef string
	// MessageID is the provider's message ID, when the event carries one.
	MessageID string
	// Status is the final receipt, or sms.ReceiptNone for an intermediate event (which still
	// proves that the provider accepted the attempt).
	Status sms.ReceiptStatus
	// At is when the provider says the event happened.
	At time.Time
	// Provider names the provider that reported it (endusersms, simulator, ...).
	Provider string
	// Detail is the provider's own code for the event, e.g. TEXT_BLOCKED or validity_expired.
	Detail string
	// RecordedAt is when the store wrote it; set by Store.Put.
	RecordedAt time.Time
	// ConfigurationSet is the End User Messaging configuration set the event came through,
	// from the message's context (empty for other providers, and for messages sent without
	// one). It is compared with the Recorder's, never stored.
	ConfigurationSet string
}

// Attempt returns the notification ID and attempt number that AttemptRef names.
func (r Receipt) Attempt() (notificationID string, n int, ok bool) {
	return sms.ParseAttemptRef(r.AttemptRef)
}

// SMS returns the receipt as the sms package's ReceiptReader reports it.
func (r Receipt) SMS() sms.Receipt {
	return sms.Receipt{AttemptRef: r.AttemptRef, MessageID: r.MessageID, Provider: r.Provider, Status: r.Status, At: r.At}
}

// Held returns the final receipt r as a record holds it (notify.Record.EarlyReceipt).
func (r Receipt) Held() notify.Receipt {
	return notify.Receipt{State: r.Status.State(), Provider: r.Provider, MessageID: r.MessageID, At: r.At}
}

// Final reports whether the receipt is the provider's final word on delivery.
func (r Receipt) Final() bool { return r.Status != sms.ReceiptNone }

// maxField bounds every text field of a receipt.
const maxField = 128

// detailPattern is what a provider's event code may look like; anything else is dropped
// rather than stored, so that free text (which could echo a number) never lands in the table.
var detailPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// safeDetail returns code when it looks like an event code, else "".
func safeDetail(code string) string {
	if detailPattern.MatchString(code) {
		return code
	}
	return ""
}

// Validate reports a receipt that cannot be recorded, wrapping ErrPoison. Its errors never
// quote the receipt: a malformed one may hold anything.
func (r Receipt) Validate() error {
	if _, _, ok := r.Attempt(); !ok || len(r.AttemptRef) > maxField {
		return fmt.Errorf("providerevents.validate: no attempt reference of ours: %w", ErrPoison)
	}
	switch r.Status {
	case sms.ReceiptNone, sms.ReceiptDelivered, sms.ReceiptUndelivered:
	default:
		return fmt.Errorf("providerevents.validate: unknown status: %w", ErrPoison)
	}
	if len(r.MessageID) > maxField || len(r.Provider) > maxField || r.Provider == "" {
		return fmt.Errorf("providerevents.validate: bad message ID or provider: %w", ErrPoison)
	}
	if r.Detail != "" && safeDetail(r.Detail) == "" {
		return fmt.Errorf("providerevents.validate: bad detail: %w", ErrPoison)
	}
	return nil
}

// Supersedes reports whether next replaces prev in the receipts table: only a final receipt
// replaces a stored intermediate one. Everything else keeps what is stored, so recording is
// idempotent, order-independent for final over intermediate, and the first final word wins.
func Supersedes(next, prev Receipt) bool { return next.Final() && !prev.Final() }

// Outcome is what recording one receipt did.
type Outcome string

// The outcomes, also the Outcome dimension of the Receipts metric.
const (
	// OutcomeTransitioned: a sent record moved to delivered or undelivered. A final receipt
	// applied at once is not stored in the receipts table: the transition holds it.
	OutcomeTransitioned Outcome = "transitioned"
	// OutcomeRecorded: the receipt is kept as evidence and nothing else changed (an
	// intermediate receipt, or a final one for a record waiting for reconciliation).
	OutcomeRecorded Outcome = "recorded"
	// OutcomeEarly: a final receipt arrived while the dispatch worker still holds the lease
	// for that attempt; it is recorded and held on the notification, whose next transition
	// applies it (sent → delivered or undelivered, or reconciliation of dispatch_unknown).
	OutcomeEarly Outcome = "early"
	// OutcomeDuplicate: the record already holds this final receipt's state (nothing is
	// written), or one final receipt is already held on the dispatching record.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeStale: the record is past the point where this receipt could change it (another
	// attempt, a terminal state, or a contradicting final receipt).
	OutcomeStale Outcome = "stale"
	// OutcomeMismatch: the receipt names an attempt of a record, but another provider than
	// the one that attempt went to, or another message ID than the record holds. It is kept
	// in the receipts table as evidence and alarmed on, never applied to the record.
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeOrphan: no record carries the receipt's notification ID.
	OutcomeOrphan Outcome = "orphan"
	// OutcomePoison: the event was malformed; it was acknowledged and dropped.
	OutcomePoison Outcome = "poison"
)
