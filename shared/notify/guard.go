package notify

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Abuse guards. A password-reset endpoint is the favourite target of SMS pumping: an attacker
// triggers resets for many premium or sequential numbers and the sender pays per message.
// Service refuses, before any record is written, a destination outside the allowed countries
// (Countries). The counters (Guard) decide after the record's conditional put, once per key:
// only the request that created the record counts it, a refusal is written onto the record
// (StateRefused), and every other request with the key gets the creator's decision (see
// decide.go). A replay of an admitted key is never counted and never refused.

// RefusalReason names why the guard refused an admission. It is a metric dimension and a log
// field: it never holds a number.
type RefusalReason string

// The refusal reasons.
const (
	// RefusedDestinationHour: the destination reached its admissions per hour.
	RefusedDestinationHour RefusalReason = "destination_hour"
	// RefusedDestinationDay: the destination reached its admissions per day.
	RefusedDestinationDay RefusalReason = "destination_day"
	// RefusedPrefixVelocity: the number's prefix admitted too many new destinations this
	// minute.
	RefusedPrefixVelocity RefusalReason = "prefix_velocity"
	// RefusedCountry: the number's country is not on the allow-list.
	RefusedCountry RefusalReason = "country_not_allowed"
	// RefusedNumberType: the number's type (premium rate, toll free, ...) is not allowed.
	RefusedNumberType RefusalReason = "number_type_not_allowed"
	// RefusedInvalidNumber: the number is in no country, or not valid in its own.
	RefusedInvalidNumber RefusalReason = "invalid_number"
)

// Sentinel errors of a refusal; a *RefusedError wraps exactly one of them.
var (
	// ErrRateLimited means the destination reached one of its per-window limits.
	ErrRateLimited = errors.New("destination rate limited")
	// ErrPrefixRateLimited means the destination's prefix is over its velocity ceiling.
	ErrPrefixRateLimited = errors.New("destination prefix rate limited")
	// ErrDestinationNotAllowed means the destination's country or number type is not
	// allowed, or the number is not valid.
	ErrDestinationNotAllowed = errors.New("destination not allowed")
)

// RefusedError is a refused admission. A country refusal stores nothing. A counter's refusal
// is stored on the record (StateRefused): a repeat of the key gets it again, and a new request
// needs a new key once RetryAfter has passed.
type RefusedError struct {
	Reason RefusalReason
	// RetryAfter is how long until the window that refused it ends (0 for RefusedCountry,
	// RefusedNumberType and RefusedInvalidNumber).
	RetryAfter time.Duration
	// DestinationFP and CountryCode say which destination was refused, safely: a keyed
	// fingerprint and an ISO 3166-1 alpha-2 country (UnknownCountry when the number has
	// none; "" without Regions). The number itself is never held here.
	DestinationFP string
	CountryCode   string
	// DestinationCounted is set by a Guard whose prefix refused after the destination's count
	// was taken: Guard.Release gives that count back.
	DestinationCounted bool
}

// Error names the reason, never the number.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s (%s, retry after %s)", e.Unwrap(), e.Reason, e.RetryAfter)
}

// Unwrap makes errors.Is match the refusal's sentinel.
func (e *RefusedError) Unwrap() error {
	switch e.Reason {
	case RefusedPrefixVelocity:
		return ErrPrefixRateLimited
	case RefusedCountry, RefusedNumberType, RefusedInvalidNumber:
		return ErrDestinationNotAllowed
	case RefusedPrefixBlocked:
		return ErrPrefixBlocked
	}
	return ErrRateLimited
}

// Destination is what admission knows of a number, worked out once where the request enters
// (Service.destination) and passed along: keyed fingerprints of the number and of its prefix,
// its country (see RefusedError.CountryCode) and its type. It never holds the number or the
// prefix digits. The record keeps the first three (DestinationOf), so a worker that picks a
// record up has the guard's view of its number without the number; the type only matters at
// the door.
type Destination struct {
	// Number is the canonical E.164 form of the request's number (Regions.Place), the one
	// form every fingerprint, limit, prefix and provider request uses. A secret: never stored
	// but sealed.
	Number      string
	FP          string
	PrefixFP    string
	CountryCode string
	// Type is the number's type (NumberUnknown when the intake places no numbers, or the
	// record was admitted before types were checked); it is not stored on the record.
	Type NumberType
}

// DestinationOf returns the destination stored on rec at its admission.
func DestinationOf(rec Record) Destination {
	return Destination{FP: rec.DestinationFP, PrefixFP: rec.PrefixFP, CountryCode: rec.Country}
}

// RecountAfter is how long after a notification's admission a Guard still counts it in the
// windows of its admission: a count taken later (a record whose creator died, picked up that
// late) goes in the windows of the moment it runs, where the guard still keeps counts. A Guard
// keeps each window's counts at least this long after the window ends.
const RecountAfter = 45 * time.Minute

// ErrGuardUnavailable means the guard could not count an admission: its storage failed. The
// record stays undecided (nothing is sent), and repeating the request counts it then.
var ErrGuardUnavailable = errors.New("abuse guard unavailable")

// Guard counts admissions per destination and per prefix, atomically, in shared storage. Its
// counts are idempotent per notification: counting the same notification again, by whoever
// picks its record up, counts nothing more and answers as the first count did (admitted), so
// that a record whose creator failed or died can be counted by the next one to touch it.
type Guard interface {
	// Admit counts one admission of the notification notificationID, to d, in the windows of
	// at (its admission time, whenever the count runs), or returns a *RefusedError. A
	// notification already counted is admitted again without counting. A refusal counts
	// nothing in the window that refused; when DestinationCounted is set, the destination's
	// count was taken (the prefix refused) and Release gives it back. Any other error is a
	// failure of the guard's storage.
	Admit(ctx context.Context, d Destination, notificationID string, at time.Time) error
	// Release takes back the destination count of notificationID that Admit took at at; a
	// count not held is left alone.
	Release(ctx context.Context, d Destination, notificationID string, at time.Time) error
}

// GuardLimits are the guard's limits. A zero limit turns that check off.
type GuardLimits struct {
	// PerHour and PerDay bound the admissions per destination in a UTC clock hour and a UTC
	// day.
	PerHour, PerDay int
	// PrefixDigits is how many digits of the E.164 number, calling code included, make its
	// prefix.
	PrefixDigits int
	// PrefixPerMinute bounds the distinct destinations admitted per prefix in a UTC clock
	// minute.
	PrefixPerMinute int
}

// DefaultGuardLimits returns the limits used when configuration sets none.
func DefaultGuardLimits() GuardLimits {
	return GuardLimits{PerHour: 5, PerDay: 10, PrefixDigits: 6, PrefixPerMinute: 20}
}

// Validate reports limits that cannot be applied.
func (l GuardLimits) Validate() error {
	var errs []error
	if l.PerHour < 0 || l.PerDay < 0 || l.PrefixPerMinute < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	if l.PerDay > 0 && l.PerHour > l.PerDay {
		errs = append(errs, fmt.Errorf("per-hour limit %d exceeds the per-day limit %d", l.PerHour, l.PerDay))
	}
	if l.PrefixDigits < 1 || l.PrefixDigits > 15 {
		errs = append(errs, fmt.Errorf("prefix digits %d must be 1 to 15", l.PrefixDigits))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("notify.guard limits: %w", err)
	}
	return nil
}

// Prefix returns the first n digits of a valid E.164 number (the calling code included), with
// the "+". It is as secret as the number is: only its keyed fingerprint is ever stored.
func Prefix(e164 string, n int) string {
	return e164[:min(len(e164), n+1)]
}

// prefixFPDomain separates a prefix's fingerprint from a number's, which shares the HMAC key.
const prefixFPDomain = "prefix:"

// destination works out req's destination: the one place a number is fingerprinted and
// placed in its country.
func (in *Service) destination(req Request) Destination {
	digits := in.PrefixDigits
	if digits <= 0 {
		digits = DefaultGuardLimits().PrefixDigits
	}
	number, country, kind := in.Countries.place(req.To)
	return Destination{
		Number:      number,
		FP:          in.Hasher.DestinationFP(number),
		PrefixFP:    in.Hasher.DestinationFP(prefixFPDomain + Prefix(number, digits)),
		CountryCode: country,
		Type:        kind,
	}
}

// checkBlocked refuses d when its prefix is blocked (see Conversions.Blocked): a lookup in a
// cached list of decisions, no read of its own. A failed refresh of the list is not a refusal:
// it answers from the list it had, and OnError hears of it. With no list ever read it returns
// the error, and the guard is unavailable (503): it never answers from an empty cache.
func (dc Decider) checkBlocked(ctx context.Context, d Destination, now time.Time) error {
	if dc.Conversions == nil {
		return nil
	}
	b, blocked, err := dc.Conversions.Blocked(ctx, d.PrefixFP, now)
	dc.Conversions.failed("refresh", err)
	if errors.Is(err, ErrBlockListUnknown) {
		return err
	}
	if !blocked {
		return nil
	}
	return &RefusedError{Reason: RefusedPrefixBlocked, RetryAfter: b.Until.Sub(now), DestinationFP: d.FP, CountryCode: d.CountryCode}
}
