package notify

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Abuse guards. A password-reset endpoint is the favourite target of SMS pumping: an attacker
// triggers resets for many premium or sequential numbers and the sender pays per message.
// Intake refuses, before any record is written, a destination outside the allowed countries
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

// Destination is what the guard knows of a number: keyed fingerprints of the number and of
// its prefix, and its country (see RefusedError.CountryCode). It never holds the number or
// the prefix digits.
type Destination struct {
	FP          string
	PrefixFP    string
	CountryCode string
}

// Guard counts admissions per destination and per prefix, atomically, in shared storage.
type Guard interface {
	// Admit counts one admission of d at now, or returns a *RefusedError. A refusal counts
	// nothing in the window that refused; when DestinationCounted is set, the destination's
	// count was taken (the prefix refused) and Release gives it back.
	Admit(ctx context.Context, d Destination, now time.Time) error
	// Release takes back the destination count of a refusal that Admit counted at now.
	Release(ctx context.Context, d Destination, now time.Time) error
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

// destinationOf returns the guard's view of req's number, whose fingerprint is fp.
func (in *Intake) destinationOf(req Request, fp string) Destination {
	digits := in.PrefixDigits
	if digits <= 0 {
		digits = DefaultGuardLimits().PrefixDigits
	}
	return Destination{
		FP:          fp,
		PrefixFP:    in.Hasher.DestinationFP(prefixFPDomain + Prefix(req.To, digits)),
		CountryCode: in.Countries.Of(req.To),
	}
}

// checkBlocked refuses d when its prefix is blocked (see Conversions.Blocked): a lookup in a
// cached list of decisions, no read of its own. A failed refresh of the list is not a refusal:
// it answers from the list it had, and OnError hears of it.
func (in *Intake) checkBlocked(ctx context.Context, d Destination, now time.Time) error {
	if in.Conversions == nil {
		return nil
	}
	b, blocked, err := in.Conversions.Blocked(ctx, d.PrefixFP, now)
	in.Conversions.failed("refresh", err)
	if !blocked {
		return nil
	}
	return &RefusedError{Reason: RefusedPrefixBlocked, RetryAfter: b.Until.Sub(now), DestinationFP: d.FP, CountryCode: d.CountryCode}
}
