package workercore

import (
	"errors"
	"fmt"
	"time"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// LeaseMargin is the time a dispatch worker needs besides the provider call: the lease write,
// the outcome write and the scheduling. Settings.Validate requires Lease to exceed
// ProviderTimeout by at least this much, so a live worker always records its outcome before
// its lease can be reclaimed.
const LeaseMargin = 5 * time.Second

// SweepInterval is how often the sweeper runs: the rate(1 minute) schedule of template.yaml.
const SweepInterval = time.Minute

// Settings are the workers' timings and bounds. DefaultSettings gives working values; config
// overrides them from the environment.
type Settings struct {
	// MaxAttempts bounds the provider calls for one notification (notify.Policy.MaxAttempts).
	MaxAttempts int
	// Lease is how long a dispatch worker holds a record while calling the provider.
	Lease time.Duration
	// ProviderTimeout bounds one provider call (and one lookup). The call's context ends at
	// attempted_at + ProviderTimeout, so no request of an attempt can be written later.
	ProviderTimeout time.Duration
	// MinValidity is the least validity period worth sending with. A record with less time
	// than this left before its dispatch deadline is expired instead of leased, and a worker
	// that finds less than this left after taking the lease does not call the provider.
	// SettingsFromConfig keeps it at or above the provider's minimum validity period.
	MinValidity time.Duration
	// Visibility is the provider's visibility window: how long after an attempt a lookup must
	// wait before "not found" proves the provider did not accept it.
	Visibility time.Duration
	// MaxReconciles bounds the inconclusive lookups of one attempt. After that the record
	// waits for its dispatch deadline, when one last lookup settles it or it expires as
	// unresolved.
	MaxReconciles int
	// BackoffBase and BackoffMax shape the jittered exponential backoff of retries and of
	// inconclusive lookups: attempt n waits between half and all of min(BackoffMax,
	// BackoffBase·2^(n-1)).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// SweepGrace is how overdue a record must be before the sweeper acts on it, so the sweeper
	// does not race a delayed message that is about to arrive.
	SweepGrace time.Duration
	// RequeueAfter is how far the sweeper moves a record's next_action_at forward when it sends
	// its queue message again: the record is looked at again only if that message is lost too.
	// It is the policy's enqueue grace (notify.Policy.SweepAfter).
	RequeueAfter time.Duration
	// SweepLimit bounds the records the sweeper reads per shard and run.
	SweepLimit int
	// Parallelism is how many messages of one SQS batch a worker handles at once.
	Parallelism int
}

// DefaultSettings returns the settings used when configuration sets nothing.
func DefaultSettings() Settings {
	return Settings{
		MaxAttempts:     5,
		Lease:           30 * time.Second,
		ProviderTimeout: 10 * time.Second,
		MinValidity:     time.Second,
		Visibility:      60 * time.Second,
		MaxReconciles:   10,
		BackoffBase:     time.Second,
		BackoffMax:      5 * time.Minute,
		SweepGrace:      30 * time.Second,
		RequeueAfter:    notify.DefaultPolicy().SweepAfter,
		SweepLimit:      500,
		Parallelism:     10,
	}
}

// Validate reports settings the workers cannot run with.
func (s Settings) Validate() error {
	var errs []error
	if s.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("max attempts %d must be at least 1", s.MaxAttempts))
	}
	if s.ProviderTimeout <= 0 {
		errs = append(errs, fmt.Errorf("provider timeout %s must be positive", s.ProviderTimeout))
	}
	if s.Lease < s.ProviderTimeout+LeaseMargin {
		errs = append(errs, fmt.Errorf("lease %s must be at least the provider timeout %s plus %s", s.Lease, s.ProviderTimeout, LeaseMargin))
	}
	if s.MinValidity < time.Second {
		errs = append(errs, fmt.Errorf("min validity %s must be at least 1s (providers count validity in whole seconds)", s.MinValidity))
	}
	if s.Visibility < 0 || s.SweepGrace < 0 || s.RequeueAfter <= 0 {
		errs = append(errs, errors.New("visibility and sweep grace must not be negative, requeue delay must be positive"))
	}
	if s.MaxReconciles < 1 {
		errs = append(errs, fmt.Errorf("max reconciles %d must be at least 1", s.MaxReconciles))
	}
	if s.BackoffBase <= 0 || s.BackoffMax < s.BackoffBase {
		errs = append(errs, fmt.Errorf("backoff base %s must be positive and not above the max %s", s.BackoffBase, s.BackoffMax))
	}
	if s.SweepLimit < 1 || s.Parallelism < 1 {
		errs = append(errs, errors.New("sweep limit and parallelism must be at least 1"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workercore.settings: %w", err)
	}
	return nil
}

// OpenAfterDeadline returns the longest a record can stay non-terminal after its dispatch
// deadline: a lease taken just before the deadline runs Lease longer; the sweeper sees it run
// out within SweepGrace and one SweepInterval; reconciliation then waits out the visibility
// window and makes one lookup (ProviderTimeout); should that message be lost, the sweeper
// finds the record once more. DynamoDB's TTL must not remove a record before then.
func (s Settings) OpenAfterDeadline() time.Duration {
	return s.Lease + 2*(s.SweepGrace+SweepInterval) + s.Visibility + s.ProviderTimeout
}

// CheckRetention reports a policy under which TTL could remove a record that is still open:
// the record's TTL is expires_at + StatusGrace, that is its deadline + SafetyMargin +
// StatusGrace, and it must not come before OpenAfterDeadline has passed. The error names the
// variables to change.
func CheckRetention(p notify.Policy, s Settings) error {
	if p.SafetyMargin+p.StatusGrace >= s.OpenAfterDeadline() {
		return nil
	}
	return fmt.Errorf("workercore.settings: %s (%s) plus %s (%s) is shorter than the lease and reconciliation horizon %s (%s, SMS_TIMEOUT, SMS_VISIBILITY_SECONDS, the sweeper's grace and schedule): TTL could remove a record that is still open; raise %s",
		config.EnvStatusGraceHours, p.StatusGrace, config.EnvSafetyMarginSeconds, p.SafetyMargin, s.OpenAfterDeadline(),
		config.EnvLeaseSeconds, config.EnvStatusGraceHours)
}

// SettingsFromConfig returns DefaultSettings with what the configuration sets applied: the
// policy's MaxAttempts, the Worker fields that are set, and the provider's timeout and
// visibility window. MinValidity is never below the provider's minimum validity: with less
// time left the provider refuses the send without a call, and leasing for it would spend an
// attempt (retry_scheduled, even failed / ATTEMPTS_EXHAUSTED) on a record that should expire.
func SettingsFromConfig(c config.Config, p config.SMS) Settings {
	s := DefaultSettings()
	if c.Policy.MaxAttempts > 0 {
		s.MaxAttempts = c.Policy.MaxAttempts
	}
	if c.Worker.MaxReconciles > 0 {
		s.MaxReconciles = c.Worker.MaxReconciles
	}
	if c.Worker.Lease > 0 {
		s.Lease = c.Worker.Lease
	}
	if c.Worker.MinValidity > 0 {
		s.MinValidity = c.Worker.MinValidity
	}
	if c.Worker.BackoffBase > 0 {
		s.BackoffBase = c.Worker.BackoffBase
	}
	if c.Worker.BackoffMax > 0 {
		s.BackoffMax = c.Worker.BackoffMax
	}
	if c.Policy.SweepAfter > 0 {
		s.RequeueAfter = c.Policy.SweepAfter
	}
	s.MinValidity = max(s.MinValidity, p.MinValidity())
	if p.Timeout > 0 {
		s.ProviderTimeout = p.Timeout
	}
	s.Visibility = p.Visibility
	return s
}

// backoff returns the jittered wait after the nth failure (n ≥ 1): "equal jitter", a uniform
// draw between half and all of min(max, base·2^(n-1)), so waits spread out but never collapse
// to zero. rnd returns a float in [0, 1).
func backoff(n int, base, maxWait time.Duration, rnd func() float64) time.Duration {
	d := base
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	half := d / 2
	return half + time.Duration(rnd()*float64(d-half))
}
