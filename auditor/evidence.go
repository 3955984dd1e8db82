package auditor

import (
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// Step is one transition as the evidence report tells it.
type Step struct {
	Seq               string        `json:"seq"`
	Version           int64         `json:"version"`
	At                time.Time     `json:"at"`
	From              notify.State  `json:"from_state"`
	To                notify.State  `json:"to_state"`
	Reason            notify.Reason `json:"reason"`
	Provider          string        `json:"provider,omitempty"`
	ProviderMessageID string        `json:"provider_message_id,omitempty"`
	PurgedBy          string        `json:"purged_by,omitempty"`
	// Says is the reason in plain language.
	Says string `json:"says"`
}

func stepOf(e auditlog.Entry) Step {
	return Step{
		Seq: e.Seq, Version: e.Version, At: e.At, From: e.FromState, To: e.ToState, Reason: e.Reason,
		Provider: e.Provider, ProviderMessageID: e.ProviderMessageID, PurgedBy: e.PurgedBy,
		Says: Describe(e.Reason),
	}
}

// Attempt is one provider attempt: the lease that started it and everything that followed
// until the next lease.
type Attempt struct {
	Number  int64     `json:"number"`
	Started time.Time `json:"started"`
	// Steps are the transitions after the lease: the provider's answer, reconciliation,
	// a receipt, an expiry.
	Steps []Step `json:"steps"`
}

// NotificationEvidence is the story of one notification.
type NotificationEvidence struct {
	NotificationID string `json:"notification_id"`
	IdempotencyKey string `json:"idempotency_key"`
	DestinationFP  string `json:"destination_fp,omitempty"`
	// Admission is the first recorded transition: ∅→accepted, or ∅→expired when the request
	// arrived too late. It is nil when the chain's first entry is missing.
	Admission *Step `json:"admission"`
	// PolicyVersion and SafetyMarginMS are those in force at admission (the first entry).
	PolicyVersion  string    `json:"policy_version"`
	SafetyMarginMS int64     `json:"safety_margin_ms"`
	Attempts       []Attempt `json:"attempts"`
	// Last is the last transition of the record itself (not the purge).
	Last *Step `json:"last"`
	// Stopped is true when no send can happen any more (sent or a terminal state).
	Stopped bool `json:"stopped"`
	// Final is true when nothing at all can change any more (a terminal state).
	Final bool `json:"final"`
	// Purge is the removal of the record from the notifications table, if recorded.
	Purge *Step `json:"purge,omitempty"`
	// Entries is how many audit entries the chain holds; Problems are what Verify found.
	Entries  int       `json:"entries"`
	Problems []Problem `json:"problems"`
	// Digests says whether the entries are covered by verified signed digests (set by
	// AddCoverage).
	Digests *DigestCoverage `json:"digests,omitempty"`
	// KnownGaps are the gap entries of the chain.
	KnownGaps []KnownGap `json:"known_gaps,omitempty"`
}

// AddCoverage sets each notification's digest coverage from cov (see Coverage).
func (ev *Evidence) AddCoverage(cov map[string]DigestCoverage) {
	for i := range ev.Notifications {
		if c, ok := cov[ev.Notifications[i].NotificationID]; ok {
			ev.Notifications[i].Digests = &c
		}
	}
}

// Evidence is the plain-language report of every notification of one event.
type Evidence struct {
	EventID       string                 `json:"event_id"`
	Notifications []NotificationEvidence `json:"notifications"`
}

// BuildEvidence tells the story of eventID from its entries (Reader.Timeline).
func BuildEvidence(eventID string, entries []auditlog.Entry) Evidence {
	ev := Evidence{EventID: eventID, Notifications: []NotificationEvidence{}}
	for _, c := range auditlog.Chains(entries) {
		n := NotificationEvidence{
			NotificationID: c.NotificationID,
			IdempotencyKey: c.Entries[0].IdempotencyKey(),
			DestinationFP:  c.Entries[0].DestinationFP,
			PolicyVersion:  c.Entries[0].PolicyVersion,
			SafetyMarginMS: c.Entries[0].SafetyMarginMS,
			Attempts:       []Attempt{},
			Entries:        len(c.Entries),
			Problems:       VerifyChain(c),
			KnownGaps:      KnownGaps(c.Entries),
		}
		if n.Problems == nil {
			n.Problems = []Problem{}
		}
		var cur *Attempt
		for _, e := range c.Entries {
			s := stepOf(e)
			switch {
			case e.Purged():
				n.Purge = &s
				continue
			case e.Gap():
				continue
			case e.Version == 1 && e.FromState == notify.StateNone:
				n.Admission = &s
			case e.Reason == notify.ReasonLeaseAcquired:
				n.Attempts = append(n.Attempts, Attempt{Number: e.Attempt, Started: e.At, Steps: []Step{}})
				cur = &n.Attempts[len(n.Attempts)-1]
			case cur != nil:
				cur.Steps = append(cur.Steps, s)
			}
			n.Last = &s
		}
		if n.Last != nil {
			n.Stopped = n.Last.To.SendingDone()
			n.Final = n.Last.To.Terminal()
		}
		ev.Notifications = append(ev.Notifications, n)
	}
	return ev
}

// descriptions tells each reason in plain language.
var descriptions = map[notify.Reason]string{
	notify.ReasonAdmitted:                     "accepted for sending",
	notify.ReasonExpiredAtAdmission:           "it arrived after its dispatch deadline, so it was recorded as expired and never sent",
	notify.ReasonLeaseAcquired:                "a worker took the lease to call the provider",
	notify.ReasonProviderAccepted:             "the provider accepted the message",
	notify.ReasonProviderTimeout:              "the provider call timed out after the request was written; outcome unknown, no resend allowed",
	notify.ReasonConnectionLost:               "the connection dropped after the request was written; outcome unknown, no resend allowed",
	notify.ReasonProviderAmbiguous:            "the provider's answer was ambiguous; outcome unknown, no resend allowed",
	notify.ReasonLeaseExpired:                 "the worker's lease ran out with no outcome recorded; outcome unknown, no resend allowed",
	notify.ReasonProviderThrottled:            "the provider throttled the request; not sent, another attempt scheduled",
	notify.ReasonProviderUnavailable:          "the provider was unavailable; not sent, another attempt scheduled",
	notify.ReasonProviderRejected:             "the provider rejected the message permanently",
	notify.ReasonAttemptsExhausted:            "no attempts were left",
	notify.ReasonReconciledAccepted:           "reconciliation found that the provider had accepted it",
	notify.ReasonReconciledNotFound:           "reconciliation found that the provider never had it; another attempt authorised",
	notify.ReasonReconcileInconclusive:        "reconciliation could not tell yet",
	notify.ReasonReconciledByReceipt:          "reconciliation found the provider's delivery receipt for the attempt",
	notify.ReasonExpiredBeforeDispatch:        "the dispatch deadline passed before it could be sent",
	notify.ReasonExpiredUnresolved:            "the dispatch deadline passed while the outcome was still unknown",
	notify.ReasonCancelled:                    "the caller cancelled it",
	notify.ReasonSuperseded:                   "a newer request superseded it",
	notify.ReasonRefusedDestinationHour:       "the abuse guard refused it: the number reached its admissions this hour",
	notify.ReasonRefusedDestinationDay:        "the abuse guard refused it: the number reached its admissions today",
	notify.ReasonRefusedPrefixVelocity:        "the abuse guard refused it: its number range admitted too many numbers this minute",
	notify.ReasonRefusedPrefixBlocked:         "the abuse guard refused it: its number range is blocked because the codes sent to it are not used",
	notify.ReasonRefusedDestinationNotAllowed: "dispatch refused it: the sealed number is outside the allowed countries or number types",
	notify.ReasonReceiptDelivered:             "the carrier reported it delivered",
	notify.ReasonReceiptFailed:                "the carrier reported it undelivered",
	notify.ReasonConverted:                    "the caller reported its code or link used",
	auditlog.ReasonPurgedTTL:                  "DynamoDB TTL removed the record after its status grace period",
	auditlog.ReasonPurgedManual:               "the record was removed other than by TTL",
	auditlog.ReasonRecordsLost:                "the transitions were lost with a stream batch that could no longer be replayed; recorded from the notification's record",
}

// Describe returns reason in plain language, or the code itself when it is unknown.
func Describe(reason notify.Reason) string {
	if d, ok := descriptions[reason]; ok {
		return d
	}
	return string(reason)
}
