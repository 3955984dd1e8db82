package notify

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Conversion. The caller reports that the code or link of a notification was used. It is
// evidence on a record that was sent, not a state of its own: the transition keeps the state
// (sent → sent, delivered → delivered, undelivered → undelivered, reason CONVERTED), sets
// ConvertedAt, and is audited like every other. A delivery receipt that arrives after the
// conversion still moves sent to delivered, and the record stays converted.

var (
	// ErrNotSent means the notification was never accepted by the provider (it is still on
	// its way, or it stopped before a send): there is nothing to convert yet.
	ErrNotSent = errors.New("notification was never sent")
	// ErrFeedback means the conversion is recorded but the provider's feedback call failed;
	// repeating the request repeats the feedback, and nothing else.
	ErrFeedback = errors.New("provider feedback unavailable")
)

// Feedback tells the provider that a message it accepted was used (End User Messaging SMS's
// PutMessageFeedback RECEIVED). It cannot send: it names a message the provider already has.
type Feedback interface {
	// Converted reports the message providerMessageID of provider as received. It is
	// idempotent: reporting it twice is harmless.
	Converted(ctx context.Context, provider, providerMessageID string) error
}

// Converted reports whether the caller has reported r's code or link as used.
func (r Record) Converted() bool { return !r.ConvertedAt.IsZero() }

// Convert returns the next version of r once its code or link was reported used at now. It
// returns ErrNotSent (wrapped) when r was never sent. Convert of a record already converted is
// not a transition: the caller answers with r as it stands.
func (r Record) Convert(now time.Time) (Record, error) {
	if !Allowed(r.State, r.State, ReasonConverted) {
		return Record{}, fmt.Errorf("notify.convert %s in %s: %w", r.NotificationID, r.State, ErrNotSent)
	}
	next, err := r.Apply(Change{To: r.State, Reason: ReasonConverted, NextActionAt: r.NextActionAt}, now)
	if err != nil {
		return Record{}, err
	}
	next.ConvertedAt = now
	return next, nil
}

// Conversion is the result of Service.Convert.
type Conversion struct {
	Record Record
	// Replayed is true when the record was converted already: nothing was written.
	Replayed bool
}

// maxConvertTries bounds the optimistic retries of Convert while a receipt moves the record.
const maxConvertTries = 5

// Convert records that the code or link of the notification with key was used. It is
// idempotent: a record converted already is returned as it stands (Replayed). A record never
// sent returns ErrNotSent with the record; an unknown key, or another caller's record,
// ErrNotFound. The winning conversion is counted for the record's prefix (best
// effort: a lost count never fails it), and every call, a repeat too, reports it to the
// provider when Feedback is set and the record has a provider message ID; a failed report
// wraps ErrFeedback, and the caller repeats.
func (in *Service) Convert(ctx context.Context, key string) (Conversion, error) {
	if err := CheckKey(key); err != nil {
		return Conversion{}, err
	}
	out, err := in.convert(ctx, key)
	if err != nil {
		return out, err
	}
	if !out.Replayed && in.Conversions != nil {
		in.Conversions.failed("count", in.Conversions.Converted(ctx, out.Record))
	}
	if in.Feedback != nil && out.Record.ProviderMessageID != "" {
		if err := in.Feedback.Converted(ctx, out.Record.Provider, out.Record.ProviderMessageID); err != nil {
			return out, fmt.Errorf("intake.convert %s: %w: %w", key, ErrFeedback, err)
		}
	}
	return out, nil
}

// convert writes the conversion transition, retrying while other writers move the record.
func (in *Service) convert(ctx context.Context, key string) (Conversion, error) {
	for range maxConvertTries {
		rec, err := in.lookup(ctx, key, "")
		if err == nil && !in.owns(ctx, rec) {
			err = ErrNotFound
		}
		if err != nil {
			return Conversion{}, fmt.Errorf("intake.convert %s: %w", key, err)
		}
		if rec.Converted() {
			return Conversion{Record: rec, Replayed: true}, nil
		}
		next, err := rec.Convert(in.Clock.Now())
		if err != nil {
			return Conversion{Record: rec}, err
		}
		next.Actor = in.actor(ctx)
		err = in.Store.Transition(ctx, rec, next)
		if err == nil {
			return Conversion{Record: next}, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Conversion{}, fmt.Errorf("intake.convert %s: %w", key, err)
		}
	}
	return Conversion{}, fmt.Errorf("intake.convert %s: %d concurrent changes: %w", key, maxConvertTries, ErrConflict)
}
