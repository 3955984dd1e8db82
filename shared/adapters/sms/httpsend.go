package sms

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// HTTPSender is the send skeleton every HTTP provider shares: the validity check, the bounded
// exchange and the classification of a failure without an answer. An adapter supplies what
// differs between providers (how to build the request, how to read the answer) and calls
// Send; an HTTPSender is itself a Sender.
//
// Send makes one attempt, in this order:
//
//  1. the validity period is rounded down to whole seconds within [MinValiditySeconds,
//     MaxValiditySeconds] (WholeSeconds); a period too short is refused unsent (TooShort);
//  2. Request builds the request under a context bounded by Timeout; its error means nothing
//     left this process (NotAccepted/not_written);
//  3. the request is exchanged (Exchange): without an answer, the failure is not accepted if
//     nothing was written, else unknown (TransportOutcome);
//  4. Classify reads the answer, normally with ClassifySend and the provider's documented
//     semantics.
//
// Every error Send produces itself is wrapped as "<Op> <attempt_ref>: ..."; Request and
// Classify must keep the destination number and the message body out of theirs.
type HTTPSender struct {
	// Op names the call in errors, e.g. "sinch.send".
	Op string
	// MinValiditySeconds and MaxValiditySeconds bound the validity the provider accepts
	// (a minimum below 1 counts as 1; a maximum of 0 means no maximum).
	MinValiditySeconds, MaxValiditySeconds int64
	// Client sends the request (required).
	Client *http.Client
	// Timeout bounds the whole exchange; zero means only ctx bounds it.
	Timeout time.Duration
	// MaxResponse is the most bytes of the answer's body read; a longer body is unreadable.
	MaxResponse int64
	// Request builds the request for req, with its validity in whole seconds.
	Request func(ctx context.Context, req SendRequest, validitySeconds int64) (*http.Request, error)
	// Classify turns the provider's answer to req into an outcome.
	Classify func(resp HTTPResponse, req SendRequest) Outcome
}

var _ Sender = HTTPSender{}

// Send makes one attempt to send req, as HTTPSender's comment describes.
func (s HTTPSender) Send(ctx context.Context, req SendRequest) Outcome {
	secs, err := WholeSeconds(req.ValidityPeriod, s.MinValiditySeconds, s.MaxValiditySeconds)
	if err != nil {
		return TooShort(fmt.Errorf("%s %s: %w", s.Op, req.AttemptRef, err))
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	hr, err := s.Request(ctx, req, secs)
	if err != nil {
		return NotAccepted(DetailNotWritten, 0, fmt.Errorf("%s %s: building the request: %w", s.Op, req.AttemptRef, err))
	}
	resp, failure, ok := Exchange(s.Client, hr, s.MaxResponse)
	if !ok {
		failure.Err = fmt.Errorf("%s %s: %w", s.Op, req.AttemptRef, failure.Err)
		return failure
	}
	return s.Classify(resp, req)
}
