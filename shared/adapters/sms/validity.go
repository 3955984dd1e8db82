package sms

import (
	"errors"
	"fmt"
	"time"
)

// ErrValidityTooShort means the validity period left for an attempt rounds down to less than
// the provider accepts. Nothing was sent; the worker should expire the record rather than
// retry.
var ErrValidityTooShort = errors.New("validity period too short to send")

// WholeSeconds returns d in whole seconds, rounded down and clamped to maxSeconds, for a
// provider whose validity (or TTL) is counted in seconds within [minSeconds, maxSeconds]. It
// never rounds up: a carrier must drop the message no later than we asked. A period that
// rounds down to less than minSeconds (or to less than 1) is refused with an error wrapping
// ErrValidityTooShort.
func WholeSeconds(d time.Duration, minSeconds, maxSeconds int64) (int64, error) {
	s := int64(d / time.Second)
	if s < max(minSeconds, 1) {
		return 0, fmt.Errorf("sms.validity %s, provider minimum %ds: %w", d, max(minSeconds, 1), ErrValidityTooShort)
	}
	if maxSeconds > 0 && s > maxSeconds {
		s = maxSeconds
	}
	return s, nil
}

// TooShort returns the outcome of an attempt refused because its validity period was too
// short: NotAccepted/not_written, since nothing left this process.
func TooShort(err error) Outcome { return NotAccepted(DetailNotWritten, 0, err) }
