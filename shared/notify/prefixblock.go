package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Conversion guard. SMS pumping is recognised by what it never does: nobody uses the codes.
// Every send is counted per prefix (the guard's keyed prefix fingerprint), and every
// conversion in the same bucket as its send, without a number (per country they are metrics,
// emitted by the callers, not counters). A prefix whose
// conversion share over its recent sends falls below a threshold is blocked for a while: new
// admissions in it are refused (RefusedPrefixBlocked). An operator may allow or block a
// prefix for a time, which the automatic block never overrides.

// RefusedPrefixBlocked: the number's prefix is blocked because its messages are not used.
const RefusedPrefixBlocked RefusalReason = "prefix_blocked"

// ErrPrefixBlocked means the destination's prefix is blocked (see ConversionPolicy).
var ErrPrefixBlocked = errors.New("destination prefix blocked")

// BlockedByConversion is PrefixBlock.By for a block the counters decided.
const BlockedByConversion = "conversion"

// ConversionPolicy says when a prefix is blocked and for how long.
type ConversionPolicy struct {
	// Window is how far back a prefix's sends and conversions are summed; a block that ended
	// inside it starts the sum afresh at its end.
	Window time.Duration
	// MinSends is how many sends the window must hold before the prefix can be judged.
	MinSends int
	// BlockBelow is the conversion share (0 to 1) under which the prefix is blocked; 0 turns
	// the automatic block off.
	BlockBelow float64
	// BlockFor is how long an automatic block lasts.
	BlockFor time.Duration
	// Refresh is how old intake's cached list of blocks may grow before it is read again.
	Refresh time.Duration
}

// DefaultConversionPolicy returns the policy used when configuration sets none.
func DefaultConversionPolicy() ConversionPolicy {
	return ConversionPolicy{Window: 24 * time.Hour, MinSends: 20, BlockBelow: 0.2, BlockFor: 12 * time.Hour, Refresh: 5 * time.Second}
}

// Validate reports a policy that cannot be applied.
func (p ConversionPolicy) Validate() error {
	var errs []error
	if p.Window < time.Hour {
		errs = append(errs, fmt.Errorf("window %s is under an hour", p.Window))
	}
	if p.MinSends < 1 {
		errs = append(errs, fmt.Errorf("minimum sends %d must be at least 1", p.MinSends))
	}
	if p.BlockBelow < 0 || p.BlockBelow > 1 {
		errs = append(errs, fmt.Errorf("block-below share %v must be 0 to 1", p.BlockBelow))
	}
	if p.BlockFor <= 0 || p.Refresh <= 0 {
		errs = append(errs, errors.New("block period and refresh must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("notify.conversion policy: %w", err)
	}
	return nil
}

// ConversionCounts are a prefix's sends and conversions over a window.
type ConversionCounts struct {
	Sent, Converted int64
}

// Low reports whether c holds enough sends to judge and converts below p's threshold.
func (c ConversionCounts) Low(p ConversionPolicy) bool {
	return p.BlockBelow > 0 && c.Sent >= int64(p.MinSends) && float64(c.Converted) < p.BlockBelow*float64(c.Sent)
}

// PrefixBlock is a decision on a prefix: blocked (or, for an operator's allow, never blocked
// automatically) until Until. It names the prefix by its keyed fingerprint only.
type PrefixBlock struct {
	PrefixFP string
	Until    time.Time
	// Allow marks an operator's allow: no automatic block until Until.
	Allow bool
	// By is BlockedByConversion or the operator who decided; At is when, Note why.
	By   string
	At   time.Time
	Note string
	// Counts are the prefix's counts when the counters blocked it.
	Counts ConversionCounts
}

// Blocks reports whether b refuses admissions at now.
func (b PrefixBlock) Blocks(now time.Time) bool { return !b.Allow && now.Before(b.Until) }

// ConversionStore keeps the conversion counters and the prefix decisions.
type ConversionStore interface {
	// CountSent adds one send at at for prefixFP and returns the prefix's counts from since to
	// at.
	CountSent(ctx context.Context, prefixFP string, at, since time.Time) (ConversionCounts, error)
	// CountConverted adds one conversion of a message of prefixFP sent at sentAt.
	CountConverted(ctx context.Context, prefixFP string, sentAt time.Time) error
	// Decide writes b. An automatic decision (b.By == BlockedByConversion) is written only if
	// no decision is in force at b.At; it reports whether it was written. Every written
	// decision is also kept in the prefix's history.
	Decide(ctx context.Context, b PrefixBlock) (bool, error)
	// Decisions returns every stored decision, in force or ended.
	Decisions(ctx context.Context) ([]PrefixBlock, error)
}

// Conversions counts sends and conversions and decides, and caches, the prefix blocks.
type Conversions struct {
	Store  ConversionStore
	Policy ConversionPolicy
	Clock  Clock
	// OnError, when set, hears of each failure that intake does not let fail a request: a
	// conversion's counters not updated ("count"), the list of prefix decisions not refreshed
	// ("refresh"; admission then answers from the list it had). The wiring logs and counts it.
	OnError func(op string, err error)

	mu     sync.Mutex
	cache  map[string]PrefixBlock
	loaded time.Time
}

// Sent counts the send of rec (which the provider accepted) and blocks its prefix when its
// conversion share is low. It reports the block it wrote, if any.
func (c *Conversions) Sent(ctx context.Context, rec Record) (PrefixBlock, bool, error) {
	if rec.PrefixFP == "" {
		return PrefixBlock{}, false, nil
	}
	now := c.Clock.Now()
	since := now.Add(-c.Policy.Window)
	last, known, err := c.decision(ctx, rec.PrefixFP, now)
	if err != nil {
		return PrefixBlock{}, false, fmt.Errorf("conversions.sent %s: %w", rec.NotificationID, err)
	}
	if known && last.Until.After(since) && !last.Until.After(now) {
		// A decision ended: judge the prefix afresh from its end.
		since = last.Until
	}
	counts, err := c.Store.CountSent(ctx, rec.PrefixFP, sentAt(rec, now), since)
	if err != nil {
		return PrefixBlock{}, false, fmt.Errorf("conversions.sent %s: %w", rec.NotificationID, err)
	}
	if !counts.Low(c.Policy) || (known && now.Before(last.Until)) {
		return PrefixBlock{}, false, nil
	}
	b := PrefixBlock{PrefixFP: rec.PrefixFP, Until: now.Add(c.Policy.BlockFor), By: BlockedByConversion, At: now, Counts: counts}
	written, err := c.Store.Decide(ctx, b)
	if err != nil || !written {
		return PrefixBlock{}, false, err
	}
	c.remember(b)
	return b, true, nil
}

// Converted counts the conversion of rec in the bucket of its send.
func (c *Conversions) Converted(ctx context.Context, rec Record) error {
	if rec.PrefixFP == "" {
		return nil
	}
	if err := c.Store.CountConverted(ctx, rec.PrefixFP, sentAt(rec, rec.ConvertedAt)); err != nil {
		return fmt.Errorf("conversions.converted %s: %w", rec.NotificationID, err)
	}
	return nil
}

// MaxOverride is the longest period an operator's decision holds: a week, long enough to
// cover an incident over a weekend and its review, short enough that a forgotten allow (which
// keeps the automatic block off a range) lapses. A longer one is decided again, which leaves
// another history item with who and why.
const MaxOverride = 7 * 24 * time.Hour

// Override writes an operator's decision on prefixFP: a block (allow false) or an allow for
// the period from now (at most MaxOverride), by whom and why. It replaces whatever decision was
// in force.
func (c *Conversions) Override(ctx context.Context, prefixFP string, allow bool, period time.Duration, by, note string) (PrefixBlock, error) {
	if prefixFP == "" || by == "" || by == BlockedByConversion || period <= 0 || period > MaxOverride {
		return PrefixBlock{}, fmt.Errorf("conversions.override: a prefix fingerprint, an operator and a period of at most %s are required", MaxOverride)
	}
	now := c.Clock.Now()
	b := PrefixBlock{PrefixFP: prefixFP, Until: now.Add(period), Allow: allow, By: by, At: now, Note: note}
	if _, err := c.Store.Decide(ctx, b); err != nil {
		return PrefixBlock{}, fmt.Errorf("conversions.override %s: %w", prefixFP, err)
	}
	c.remember(b)
	return b, nil
}

// ErrBlockListUnknown means the list of prefix decisions has never been read (a cold start
// whose read failed): an empty cache would admit every blocked prefix, so the guard fails
// closed on it, as on its counters (ErrGuardUnavailable).
var ErrBlockListUnknown = errors.New("prefix decisions never read")

// Blocked returns the block in force on prefixFP at now, from a list of decisions read at
// most Policy.Refresh ago. When the list cannot be read it answers from the last one it read
// and returns the error too: a failed refresh never refuses an admission. With no list read
// yet, the error wraps ErrBlockListUnknown.
func (c *Conversions) Blocked(ctx context.Context, prefixFP string, now time.Time) (PrefixBlock, bool, error) {
	b, known, err := c.decision(ctx, prefixFP, now)
	if !known || !b.Blocks(now) {
		return PrefixBlock{}, false, err
	}
	return b, true, err
}

// decision returns the stored decision on prefixFP, refreshing the cached list when stale.
func (c *Conversions) decision(ctx context.Context, prefixFP string, now time.Time) (PrefixBlock, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if c.cache == nil || now.Sub(c.loaded) >= c.Policy.Refresh || now.Before(c.loaded) {
		var all []PrefixBlock
		if all, err = c.Store.Decisions(ctx); err == nil {
			c.cache = make(map[string]PrefixBlock, len(all))
			for _, b := range all {
				c.cache[b.PrefixFP] = b
			}
			c.loaded = now
		} else if c.loaded.IsZero() {
			err = fmt.Errorf("conversions.decisions: %w: %w", ErrBlockListUnknown, err)
		} else {
			err = fmt.Errorf("conversions.decisions: %w", err)
		}
	}
	b, ok := c.cache[prefixFP]
	return b, ok, err
}

// remember puts b in the cache at once, so the writer acts on its own decision.
func (c *Conversions) remember(b PrefixBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		c.cache = map[string]PrefixBlock{}
	}
	c.cache[b.PrefixFP] = b
}

// sentAt is when rec's message went to the provider: its attempt's lease, else fallback.
func sentAt(rec Record, fallback time.Time) time.Time {
	if !rec.AttemptedAt.IsZero() {
		return rec.AttemptedAt
	}
	return fallback
}

// failed passes err, when not nil, to OnError.
func (c *Conversions) failed(op string, err error) {
	if err != nil && c.OnError != nil {
		c.OnError(op, err)
	}
}
