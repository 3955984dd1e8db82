// Package endusersms is the sms.Sender for AWS End User Messaging SMS (the pinpointsmsvoicev2
// API), and the sms.Lookup that reconciles it from recorded delivery events.
//
// Send calls SendTextMessage once with DestinationPhoneNumber, MessageBody,
// OriginationIdentity, MessageType TRANSACTIONAL, ConfigurationSetName (whose event
// destination feeds the provider-events function), ProtectConfigurationId (whose country
// rules the service enforces; the template's blocks every country intake does not allow),
// Context {"attempt_ref": <attempt_ref>}
// (echoed in every delivery event, which is how events find their attempt) and TimeToLive:
// the validity period rounded down to whole seconds, within the API's 5–259200 s range. A
// validity that rounds below 5 s is refused without a call.
//
// The SDK's retryer is switched off for every send: the SDK retries throttling, 5xx and
// connection errors by re-sending the same request, and for SendTextMessage a retried send
// is a blind re-send of a message the service may already have accepted — exactly what
// docs/design.md's third promise forbids. Retries are the dispatch worker's decision, taken on a
// classified outcome.
//
// Errors are classified as docs/design.md's table says: ThrottlingException and
// ServiceQuotaExceededException (and any bare 429) are not accepted (throttled);
// ValidationException, AccessDeniedException, ResourceNotFoundException and ConflictException
// (e.g. DESTINATION_PHONE_NUMBER_OPTED_OUT) are permanent rejections; InternalServerException
// and every other 5xx, and a 2xx whose body cannot be read, are unknown. AWS does not
// document any 5xx of this API as "not processed", so even a 503 is unknown here. Failures
// without a response go through sms.TransportOutcome: before the request was written they are
// not accepted, after it they are unknown. No error message of the service is kept, since it
// may echo the number: only its code, reason, status and request ID.
//
// The service has no API to look a message up. NewLookup reconciles from the delivery events
// that the provider-events function recorded (sms.ReceiptReader): any event carrying the
// attempt_ref proves acceptance. No event never proves the opposite, however long after the
// attempt: an event can be dropped (SNS retries exhausted) or arrive late, and "not found"
// would authorise a re-send. Such a lookup is inconclusive, so an unknown outcome is either
// proven sent by a receipt or expires as unresolved at its deadline. The visibility window
// should cover the event pipeline's latency (service → SNS → provider-events → table): the
// reconcile worker waits that long after an attempt before its lookups.
package endusersms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// Provider is the name recorded for messages sent through AWS End User Messaging SMS.
const Provider = "endusersms"

// ContextAttemptRef is the key of the attempt reference in SendTextMessage's Context.
const ContextAttemptRef = "attempt_ref"

// ContextConfigurationSet is the key of the configuration set's name in SendTextMessage's
// Context: its events carry it back, so provider-events applies only the events of the
// configuration set this stack sends through.
const ContextConfigurationSet = "configuration_set"

// The TimeToLive range of SendTextMessage, in seconds.
const (
	MinTTLSeconds = 5
	MaxTTLSeconds = 259200
)

// MinValidity is the shortest validity period a send can carry (MinTTLSeconds): with less
// time left before the deadline, Send refuses without a call, so the worker must not lease.
const MinValidity = MinTTLSeconds * time.Second

// DefaultTimeout bounds one send when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// API is the part of *pinpointsmsvoicev2.Client that the Sender uses.
type API interface {
	SendTextMessage(ctx context.Context, in *pinpointsmsvoicev2.SendTextMessageInput, optFns ...func(*pinpointsmsvoicev2.Options)) (*pinpointsmsvoicev2.SendTextMessageOutput, error)
}

var _ API = (*pinpointsmsvoicev2.Client)(nil)

// Config configures a Sender.
type Config struct {
	// OriginationIdentity is the phone number, sender ID or pool (ID or ARN) to send from.
	OriginationIdentity string
	// ConfigurationSetName names the configuration set whose event destination receives the
	// delivery events. Optional, but without it reconciliation has nothing to read.
	ConfigurationSetName string
	// ProtectConfigurationID names the protect configuration whose country rules the service
	// applies to every send; a protect configuration named in the request takes precedence
	// over the configuration set's and the account's. Empty names none.
	ProtectConfigurationID string
	// Timeout bounds each send (default DefaultTimeout).
	Timeout time.Duration
	// Clock tells the time for Retry-After dates (default: the system clock).
	Clock notify.Clock
}

// Sender sends through SendTextMessage. It implements sms.Sender only.
type Sender struct {
	api API
	cfg Config
}

var _ sms.Sender = (*Sender)(nil)

// NewSender returns a Sender calling api.
func NewSender(api API, cfg Config) (*Sender, error) {
	if api == nil {
		return nil, errors.New("endusersms.new: no client")
	}
	if cfg.OriginationIdentity == "" {
		return nil, errors.New("endusersms.new: origination identity is empty")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = notify.SystemClock{}
	}
	return &Sender{api: api, cfg: cfg}, nil
}

// NewClient returns a pinpointsmsvoicev2 client for cfg with retries off (see the package
// doc). A non-empty endpoint overrides the endpoint the SDK would resolve. Send switches
// retries off on every call anyway, so a client built elsewhere is safe too.
func NewClient(cfg aws.Config, endpoint string) *pinpointsmsvoicev2.Client {
	return pinpointsmsvoicev2.NewFromConfig(cfg, func(o *pinpointsmsvoicev2.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		noRetry(o)
	})
}

// noRetry makes an operation a single attempt: a retried SendTextMessage is a blind re-send.
func noRetry(o *pinpointsmsvoicev2.Options) {
	o.Retryer = aws.NopRetryer{}
	// Zero keeps the SDK from wrapping the retryer again with a per-operation attempt count.
	o.RetryMaxAttempts = 0
}

// Send makes one attempt to send req.
func (s *Sender) Send(ctx context.Context, req sms.SendRequest) sms.Outcome {
	ttl, err := sms.WholeSeconds(req.ValidityPeriod, MinTTLSeconds, MaxTTLSeconds)
	if err != nil {
		return sms.TooShort(fmt.Errorf("endusersms.send %s: %w", req.AttemptRef, err))
	}
	in := &pinpointsmsvoicev2.SendTextMessageInput{
		DestinationPhoneNumber: aws.String(req.To),
		MessageBody:            aws.String(req.Body),
		OriginationIdentity:    aws.String(s.cfg.OriginationIdentity),
		MessageType:            types.MessageTypeTransactional,
		Context:                map[string]string{ContextAttemptRef: req.AttemptRef},
		TimeToLive:             aws.Int32(int32(ttl)),
		// Conversions are reported with PutMessageFeedback (package smsfeedback), which only a
		// message sent with feedback enabled accepts.
		MessageFeedbackEnabled: aws.Bool(true),
	}
	if s.cfg.ConfigurationSetName != "" {
		in.ConfigurationSetName = aws.String(s.cfg.ConfigurationSetName)
		in.Context[ContextConfigurationSet] = s.cfg.ConfigurationSetName
	}
	if s.cfg.ProtectConfigurationID != "" {
		in.ProtectConfigurationId = aws.String(s.cfg.ProtectConfigurationID)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ctx, tracker := sms.TraceWrites(ctx)
	out, err := s.api.SendTextMessage(ctx, in, noRetry)
	if err != nil {
		return classify(err, tracker, req.AttemptRef, s.cfg.Clock.Now())
	}
	if out == nil || aws.ToString(out.MessageId) == "" {
		return sms.Unknown(sms.DetailAmbiguous, fmt.Errorf("endusersms.send %s: accepted without a message ID", req.AttemptRef))
	}
	return sms.Accepted(*out.MessageId)
}

// classify turns a SendTextMessage error into an outcome: a transport failure by what was
// written, else by the service's typed exception, else by the HTTP status and error code.
func classify(err error, tracker *sms.WriteTracker, ref string, now time.Time) sms.Outcome {
	// The SDK wraps every failure of the HTTP exchange in a ResponseError, a transport
	// failure around an empty response (status 0).
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil || re.HTTPStatusCode() == 0 {
		out := sms.TransportOutcome(err, tracker)
		out.Err = fmt.Errorf("endusersms.send %s: %w", ref, err)
		return out
	}
	pe := &sms.ProviderError{Provider: Provider, Op: "send " + ref, StatusCode: re.HTTPStatusCode(), RequestID: re.ServiceRequestID()}
	// smithy.APIError, matched by its method so that this package needs no direct import.
	var apiErr interface{ ErrorCode() string }
	if errors.As(err, &apiErr) {
		pe.Code = apiErr.ErrorCode()
	}
	retryAfter := sms.RetryAfter(re.Response.Header, now)
	out, ok := byException(err, pe, retryAfter)
	if !ok {
		out = byStatus(re.HTTPStatusCode(), pe, retryAfter)
	}
	out.HTTPStatus = re.HTTPStatusCode()
	out.Code = pe.Code
	return out
}

// byException classifies the service's typed exceptions, adding the reason they carry to
// pe.Code. ok is false for any other error.
func byException(err error, pe *sms.ProviderError, retryAfter time.Duration) (out sms.Outcome, ok bool) {
	var (
		throttling *types.ThrottlingException
		quota      *types.ServiceQuotaExceededException
		validation *types.ValidationException
		denied     *types.AccessDeniedException
		notFound   *types.ResourceNotFoundException
		conflict   *types.ConflictException
		internal   *types.InternalServerException
	)
	switch {
	case errors.As(err, &throttling):
		return sms.NotAccepted(sms.DetailThrottled, retryAfter, pe), true
	case errors.As(err, &quota):
		pe.Code += "/" + string(quota.Reason)
		return sms.NotAccepted(sms.DetailThrottled, retryAfter, pe), true
	case errors.As(err, &validation):
		pe.Code += "/" + string(validation.Reason)
		if restrictedReasons[validation.Reason] {
			return sms.Restricted(pe.Code, pe), true
		}
		return sms.Rejected(pe.Code, pe), true
	case errors.As(err, &denied):
		pe.Code += "/" + string(denied.Reason)
		return sms.Rejected(pe.Code, pe), true
	case errors.As(err, &notFound):
		pe.Code += "/" + string(notFound.ResourceType)
		return sms.Rejected(pe.Code, pe), true
	case errors.As(err, &conflict):
		// Opted-out or blocked destinations, inactive resources: the service refused the
		// request and will refuse it again within any deadline we have.
		pe.Code += "/" + string(conflict.Reason)
		return sms.Rejected(pe.Code, pe), true
	case errors.As(err, &internal):
		return sms.Unknown(sms.DetailAmbiguous, pe), true
	}
	return sms.Outcome{}, false
}

// byStatus classifies an error without a typed exception by its HTTP status and code.
func byStatus(status int, pe *sms.ProviderError, retryAfter time.Duration) sms.Outcome {
	switch {
	case status >= 200 && status < 300:
		// The service answered success but the body could not be read: it may have accepted.
		return sms.Unknown(sms.DetailAmbiguous, pe)
	case status == 429 || throttleCodes[pe.Code]:
		return sms.NotAccepted(sms.DetailThrottled, retryAfter, pe)
	case status >= 400 && status < 500 && notProcessed[pe.Code]:
		return sms.NotAccepted(sms.DetailUnavailable, retryAfter, pe)
	case status >= 400 && status < 500 && status != 408:
		return sms.Rejected(pe.Code, pe)
	}
	return sms.Unknown(sms.DetailAmbiguous, pe)
}

// throttleCodes lists generic AWS throttling codes, answered before a request is processed.
var throttleCodes = map[string]bool{
	"Throttling":               true,
	"ThrottledException":       true,
	"TooManyRequestsException": true,
	"RequestLimitExceeded":     true,
}

// notProcessed lists generic AWS error codes that are answered before a request is processed
// and that pass on their own (credentials being refreshed, clock skew): a retry is safe and
// may succeed.
var notProcessed = map[string]bool{
	"ExpiredToken":          true,
	"ExpiredTokenException": true,
	"RequestExpired":        true,
	"RequestTimeTooSkewed":  true,
}

// NewLookup returns the Lookup for this provider: a lookup over the delivery events recorded
// by provider-events, found by attempt_ref. It answers Found or Inconclusive, never NotFound
// (see sms.ReceiptLookup). Its visibility window should cover the event pipeline's latency.
func NewLookup(r sms.ReceiptReader, visibility time.Duration, clock notify.Clock) *sms.ReceiptLookup {
	return sms.NewReceiptLookup(r, visibility, clock).ForProvider(Provider)
}

// restrictedReasons are the ValidationException reasons that come from this account's or
// this provider's own restrictions on where and from whom it sends, not from the destination:
// another provider of the chain may not share them (sms.DetailRestricted). The protect
// configuration's country block (a ConflictException) is the deployment's own policy and is
// deliberately not one of them: no provider may send there.
var restrictedReasons = map[types.ValidationExceptionReason]bool{
	types.ValidationExceptionReasonCountryNotEnabled:                    true,
	types.ValidationExceptionReasonDestinationCountryBlocked:            true,
	types.ValidationExceptionReasonInternationalSendingNotSupported:     true,
	types.ValidationExceptionReasonInvalidIdentityForDestinationCountry: true,
	types.ValidationExceptionReasonSenderIdNotRegistered:                true,
	types.ValidationExceptionReasonSenderIdNotSupported:                 true,
	types.ValidationExceptionReasonSenderIdRequiresRegistration:         true,
}
