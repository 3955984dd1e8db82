package notify

import (
	"errors"
	"fmt"
	"time"
)

// Policy is the configuration that decides deadlines and admission windows. It is evidence:
// its Version and SafetyMargin are stamped on every record and every audit entry, so a changed
// margin is always attributable.
type Policy struct {
	// Version names this policy, e.g. "2026-11-01"; it comes from a template parameter.
	Version string
	// SafetyMargin is subtracted from expires_at to give the dispatch deadline: the time the
	// carrier needs to deliver before the token stops being useful.
	SafetyMargin time.Duration
	// MaxAhead bounds how far in the future expires_at may be.
	MaxAhead time.Duration
	// MaxLateness bounds how far in the past expires_at may be. A request inside it but past
	// its deadline is admitted as expired (evidence that it arrived); one older than that is
	// refused as invalid.
	MaxLateness time.Duration
	// StatusGrace keeps a record readable for this long after expires_at before TTL removes it.
	StatusGrace time.Duration
	// SweepAfter is how long an accepted record may wait for its queue message before the
	// sweeper re-enqueues it.
	SweepAfter time.Duration
	// MaxAttempts bounds the provider calls for one notification.
	MaxAttempts int
}

// DefaultPolicy returns the policy used when configuration sets nothing.
func DefaultPolicy() Policy {
	return Policy{
		Version:      "default-1",
		SafetyMargin: 60 * time.Second,
		MaxAhead:     24 * time.Hour,
		MaxLateness:  time.Hour,
		StatusGrace:  24 * time.Hour,
		SweepAfter:   2 * time.Minute,
		MaxAttempts:  5,
	}
}

// Validate reports a policy that cannot be applied.
func (p Policy) Validate() error {
	var errs []error
	if p.Version == "" {
		errs = append(errs, errors.New("policy version is empty"))
	}
	if p.SafetyMargin < 0 {
		errs = append(errs, fmt.Errorf("safety margin %s is negative", p.SafetyMargin))
	}
	if p.MaxAhead <= p.SafetyMargin {
		errs = append(errs, fmt.Errorf("max ahead %s must exceed the safety margin %s", p.MaxAhead, p.SafetyMargin))
	}
	if p.MaxLateness < 0 || p.StatusGrace < 0 || p.SweepAfter <= 0 {
		errs = append(errs, errors.New("lateness, status grace and sweep delay must not be negative"))
	}
	if p.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("max attempts %d must be at least 1", p.MaxAttempts))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("notify.policy: %w", err)
	}
	return nil
}

// Deadline returns the dispatch deadline for a token that expires at expiresAt.
func (p Policy) Deadline(expiresAt time.Time) time.Time { return expiresAt.Add(-p.SafetyMargin) }
