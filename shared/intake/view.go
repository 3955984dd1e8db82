package intake

import (
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// StatusView is the JSON body of a notification's status. It holds no secret and no stored
// fingerprint: never the sealed payload, the destination fingerprint or the request
// fingerprint.
type StatusView struct {
	IdempotencyKey    string        `json:"idempotency_key"`
	NotificationID    string        `json:"notification_id"`
	EventID           string        `json:"event_id"`
	Channel           string        `json:"channel"`
	Purpose           string        `json:"purpose"`
	State             notify.State  `json:"state"`
	Reason            notify.Reason `json:"reason"`
	Version           int64         `json:"version"`
	Attempt           int           `json:"attempt"`
	CreatedAt         string        `json:"created_at"`
	UpdatedAt         string        `json:"updated_at"`
	ExpiresAt         string        `json:"expires_at"`
	DispatchDeadline  string        `json:"dispatch_deadline"`
	PolicyVersion     string        `json:"policy_version"`
	SafetyMarginMS    int64         `json:"safety_margin_ms"`
	Provider          string        `json:"provider,omitempty"`
	ProviderMessageID string        `json:"provider_message_id,omitempty"`
	// ConvertedAt is when the caller reported the code or link used.
	ConvertedAt string `json:"converted_at,omitempty"`
	// Attempts lists each attempt with the provider it went to, in order.
	Attempts []AttemptView `json:"attempts,omitempty"`
}

// AttemptView is one attempt of a notification: its number and the provider it went to.
type AttemptView struct {
	Attempt  int    `json:"attempt"`
	Provider string `json:"provider,omitempty"`
}

// NewStatusView returns the public view of rec. Times are RFC 3339 in UTC.
func NewStatusView(rec notify.Record) StatusView {
	return StatusView{
		IdempotencyKey:    notify.CallerKey(rec.IdempotencyKey),
		NotificationID:    rec.NotificationID,
		EventID:           rec.EventID,
		Channel:           rec.Channel,
		Purpose:           rec.Purpose,
		State:             rec.State,
		Reason:            rec.Reason,
		Version:           rec.Version,
		Attempt:           rec.Attempt,
		CreatedAt:         timestamp(rec.CreatedAt),
		UpdatedAt:         timestamp(rec.UpdatedAt),
		ExpiresAt:         timestamp(rec.ExpiresAt),
		DispatchDeadline:  timestamp(rec.DispatchDeadline),
		PolicyVersion:     rec.PolicyVersion,
		SafetyMarginMS:    rec.SafetyMargin.Milliseconds(),
		Provider:          rec.Provider,
		ProviderMessageID: rec.ProviderMessageID,
		Attempts:          attemptsOf(rec),
		ConvertedAt:       timestamp(rec.ConvertedAt),
	}
}

// attemptsOf returns rec's attempts with their providers.
func attemptsOf(rec notify.Record) []AttemptView {
	var out []AttemptView
	for i, p := range rec.Providers() {
		out = append(out, AttemptView{Attempt: i + 1, Provider: p})
	}
	return out
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
