package sms

import (
	"context"
	"fmt"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// LookupStatus is what a lookup learned about an attempt.
type LookupStatus string

// The three answers of a lookup.
const (
	// LookupFound means the provider accepted the attempt.
	LookupFound LookupStatus = "found"
	// LookupNotFound means the provider did not accept it: nothing carries its reference
	// although the visibility window has passed since the attempt.
	LookupNotFound LookupStatus = "not_found"
	// LookupInconclusive means the lookup could not tell: the provider failed to answer, or
	// the visibility window has not passed yet.
	LookupInconclusive LookupStatus = "inconclusive"
)

// ReceiptStatus is a provider's final word on delivery. The zero value means no final receipt
// is known yet.
type ReceiptStatus string

// The final receipts.
const (
	ReceiptNone        ReceiptStatus = ""
	ReceiptDelivered   ReceiptStatus = "delivered"
	ReceiptUndelivered ReceiptStatus = "undelivered"
)

// Reason returns the reason code a receipt is recorded with, or "" for ReceiptNone.
func (s ReceiptStatus) Reason() notify.Reason {
	switch s {
	case ReceiptDelivered:
		return notify.ReasonReceiptDelivered
	case ReceiptUndelivered:
		return notify.ReasonReceiptFailed
	}
	return ""
}

// State returns the state a sent record moves to on this receipt, or StateNone for
// ReceiptNone.
func (s ReceiptStatus) State() notify.State {
	switch s {
	case ReceiptDelivered:
		return notify.StateDelivered
	case ReceiptUndelivered:
		return notify.StateUndelivered
	}
	return notify.StateNone
}

// LookupResult is the provider's view of one attempt.
type LookupResult struct {
	Status LookupStatus
	// MessageID is the provider's message ID when Found.
	MessageID string
	// Receipt is the final delivery receipt when the provider already has one.
	Receipt ReceiptStatus
	// ReceiptAt is when that receipt was produced, when known.
	ReceiptAt time.Time
	// Matches counts the accepted messages that carry the reference (Found only). More than
	// one is evidence of a double send and should be reported loudly.
	Matches int
	// Detail says why a result is inconclusive: "not_visible_yet", "attempt_time_unknown",
	// "provider_error", ...
	Detail string
}

// Found returns a result for an attempt the provider accepted as messageID.
func Found(messageID string, receipt ReceiptStatus, at time.Time) LookupResult {
	return LookupResult{Status: LookupFound, MessageID: messageID, Receipt: receipt, ReceiptAt: at, Matches: 1}
}

// Inconclusive returns an inconclusive result with its detail.
func Inconclusive(detail string) LookupResult {
	return LookupResult{Status: LookupInconclusive, Detail: detail}
}

// Absent returns the result of a lookup that found nothing for an attempt that ended at
// attemptedAt: NotFound once visibility has passed since then, Inconclusive before, and
// Inconclusive when attemptedAt is unknown (zero).
func Absent(now, attemptedAt time.Time, visibility time.Duration) LookupResult {
	switch {
	case attemptedAt.IsZero():
		return Inconclusive("attempt_time_unknown")
	case now.Before(attemptedAt.Add(visibility)):
		return Inconclusive("not_visible_yet")
	}
	return LookupResult{Status: LookupNotFound}
}

// Reason returns the reason code the reconcile worker records for r: RECONCILED_ACCEPTED,
// RECONCILED_NOT_FOUND or RECONCILE_INCONCLUSIVE. A final receipt is recorded by a second
// transition with r.Receipt.Reason().
func (r LookupResult) Reason() notify.Reason {
	switch r.Status {
	case LookupFound:
		if r.MessageID == "" {
			return notify.ReasonReconcileInconclusive
		}
		return notify.ReasonReconciledAccepted
	case LookupNotFound:
		return notify.ReasonReconciledNotFound
	}
	return notify.ReasonReconcileInconclusive
}

// Receipt is a delivery event a provider reported for one attempt, as the provider-events
// function recorded it.
type Receipt struct {
	AttemptRef string
	MessageID  string
	// Provider names the provider that reported it; empty for receipts recorded before
	// providers were.
	Provider string
	// Status is the final receipt, or ReceiptNone when only an intermediate event (queued,
	// handed to the carrier) is recorded. Any recorded event proves the provider accepted the
	// attempt.
	Status ReceiptStatus
	At     time.Time
}

// Matches reports whether r can be the receipt of an attempt that went to provider and, when
// known, was accepted as messageID: beyond the attempt reference it was matched on, it names
// that provider and that message ID. A receipt or record without a provider (recorded before
// providers were) matches any provider; an unknown message ID on either side matches any.
func (r Receipt) Matches(provider, messageID string) bool {
	if provider != "" && r.Provider != "" && r.Provider != provider {
		return false
	}
	return messageID == "" || r.MessageID == "" || r.MessageID == messageID
}

// ReceiptReader finds the delivery events recorded for an attempt. The provider-events code
// implements it; a provider with no lookup API (AWS End User Messaging SMS) is reconciled
// through it.
type ReceiptReader interface {
	// FindByAttemptRef returns the most informative receipt recorded for attemptRef (a final
	// one if any), and false when none is recorded.
	FindByAttemptRef(ctx context.Context, attemptRef string) (Receipt, bool, error)
}

// ReceiptLookup is a Lookup over recorded delivery events. Found when a receipt with the
// attempt's reference exists; Inconclusive otherwise, never NotFound. A missing receipt proves
// nothing: the provider may have accepted the attempt and its event been dropped (SNS retries
// exhausted) or delayed beyond any window, and "not found" would authorise a re-send. So an
// unknown outcome is either proven sent by a receipt or ends expired as unresolved at its
// deadline. The visibility window (which should cover the provider's event latency plus our
// event pipeline's) only sets the detail: "not_visible_yet" before it has passed since the
// attempt, "no_receipt" after.
type ReceiptLookup struct {
	provider   string
	reader     ReceiptReader
	visibility time.Duration
	clock      notify.Clock
}

// NewReceiptLookup returns a ReceiptLookup. A nil clock is the system clock.
func NewReceiptLookup(r ReceiptReader, visibility time.Duration, clock notify.Clock) *ReceiptLookup {
	if clock == nil {
		clock = notify.SystemClock{}
	}
	return &ReceiptLookup{reader: r, visibility: visibility, clock: clock}
}

// ForProvider returns l restricted to the receipts provider reported: a receipt another
// provider reported for the reference proves nothing about this provider's attempt, and is
// reported as inconclusive ("receipt_from_another_provider").
func (l *ReceiptLookup) ForProvider(provider string) *ReceiptLookup {
	c := *l
	c.provider = provider
	return &c
}

// Visibility returns the window after an attempt before a missing receipt is reported as
// "no_receipt" rather than "not_visible_yet"; both are inconclusive.
func (l *ReceiptLookup) Visibility() time.Duration { return l.visibility }

// Lookup looks req up among the recorded receipts.
func (l *ReceiptLookup) Lookup(ctx context.Context, req LookupRequest) (LookupResult, error) {
	if l.reader == nil {
		return Inconclusive("no_receipt_reader"), fmt.Errorf("sms.receipt_lookup %s: no receipt reader", req.AttemptRef)
	}
	rc, ok, err := l.reader.FindByAttemptRef(ctx, req.AttemptRef)
	if err != nil {
		return Inconclusive("provider_error"), fmt.Errorf("sms.receipt_lookup %s: %w", req.AttemptRef, err)
	}
	if !ok {
		// Never NotFound: events can be lost or arrive late, so absence authorises nothing.
		if res := Absent(l.clock.Now(), req.AttemptedAt, l.visibility); res.Status == LookupInconclusive {
			return res, nil
		}
		return Inconclusive("no_receipt"), nil
	}
	if l.provider != "" && rc.Provider != "" && rc.Provider != l.provider {
		return Inconclusive("receipt_from_another_provider"), nil
	}
	if rc.MessageID == "" {
		rc.MessageID = req.MessageID
	}
	if rc.MessageID == "" {
		// Proof of acceptance without an ID to record: the transition needs one.
		return Inconclusive("receipt_without_message_id"), nil
	}
	return Found(rc.MessageID, rc.Status, rc.At), nil
}
