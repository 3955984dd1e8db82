// Package smsfeedback reports conversions to the SMS provider: End User Messaging SMS's
// PutMessageFeedback (status RECEIVED) and the simulator's POST /messages/{id}/feedback. It is
// not an SMS adapter: it has no send method, and the IAM action it needs,
// sms-voice:PutMessageFeedback, only labels a message the service already sent (it takes a
// message ID and a status, no number and no body), so the intake function that holds it
// cannot send.
package smsfeedback

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// The provider names whose messages this package can report, as SMS_PROVIDER spells them
// (package config).
const (
	ProviderEndUserSMS = "endusersms"
	ProviderSimulator  = "simulator"
)

// Timeout bounds one feedback call: the caller's request waits for it.
const Timeout = 3 * time.Second

// API is the part of *pinpointsmsvoicev2.Client that EndUserSMS uses.
type API interface {
	PutMessageFeedback(ctx context.Context, in *pinpointsmsvoicev2.PutMessageFeedbackInput, optFns ...func(*pinpointsmsvoicev2.Options)) (*pinpointsmsvoicev2.PutMessageFeedbackOutput, error)
}

var _ API = (*pinpointsmsvoicev2.Client)(nil)

// EndUserSMS reports conversions with PutMessageFeedback.
type EndUserSMS struct{ API API }

var _ notify.Feedback = EndUserSMS{}

// Converted marks providerMessageID RECEIVED. A message of another provider is not reported.
func (e EndUserSMS) Converted(ctx context.Context, provider, providerMessageID string) error {
	if provider != ProviderEndUserSMS {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_, err := e.API.PutMessageFeedback(ctx, &pinpointsmsvoicev2.PutMessageFeedbackInput{
		MessageId: aws.String(providerMessageID), MessageFeedbackStatus: types.MessageFeedbackStatusReceived,
	})
	if err != nil {
		return fmt.Errorf("smsfeedback.endusersms %s: %w", providerMessageID, err)
	}
	return nil
}

// Simulator reports conversions to the SMS simulator at URL, for the messages of the provider
// Name (ProviderSimulator when empty; the second simulated provider is "simulator2").
type Simulator struct {
	Name   string
	URL    string
	Client *http.Client
}

var _ notify.Feedback = Simulator{}

// Converted posts the feedback of providerMessageID. A message of another provider is not
// reported.
func (s Simulator) Converted(ctx context.Context, provider, providerMessageID string) error {
	if name := cmp.Or(s.Name, ProviderSimulator); provider != name {
		return nil
	}
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: Timeout}
	}
	body, _ := json.Marshal(simapi.Feedback{Status: simapi.FeedbackReceived})
	target := strings.TrimRight(s.URL, "/") + "/messages/" + url.PathEscape(providerMessageID) + "/feedback"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("smsfeedback.simulator %s: %w", providerMessageID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		// net/http quotes the URL; keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("smsfeedback.simulator %s: %w", providerMessageID, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("smsfeedback.simulator %s: status %d", providerMessageID, resp.StatusCode)
	}
	return nil
}

// Chain reports a conversion to each of its providers' feedback; each reports only the messages
// of its own provider, so the one that sent the message gets it.
type Chain []notify.Feedback

var _ notify.Feedback = Chain{}

// Converted reports providerMessageID of provider to every feedback of c.
func (c Chain) Converted(ctx context.Context, provider, providerMessageID string) error {
	var errs []error
	for _, f := range c {
		errs = append(errs, f.Converted(ctx, provider, providerMessageID))
	}
	return errors.Join(errs...)
}
