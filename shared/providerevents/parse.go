package providerevents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/config"
)

// ContextAttemptRef is the key of the End User Messaging SMS message context where the
// dispatch worker put the attempt's reference (endusersms.ContextAttemptRef, which a test keeps
// equal): named here too so that provider-events links no SMS adapter.
const ContextAttemptRef = "attempt_ref"

// ContextConfigurationSet is the key of the message context where the dispatch worker put the
// configuration set it sent through (endusersms.ContextConfigurationSet, kept equal by a test).
const ContextConfigurationSet = "configuration_set"

// maxEventBytes bounds one provider event. Real ones are well under 2 KiB.
const maxEventBytes = 8 << 10

// endUserEvent is the part of an AWS End User Messaging SMS event that a receipt needs. The
// event also carries destinationPhoneNumber, originationPhoneNumber, prices and carrier data:
// this type has no field for them, so they are never decoded, kept or logged.
type endUserEvent struct {
	EventType      string            `json:"eventType"`
	EventTimestamp int64             `json:"eventTimestamp"`
	IsFinal        *bool             `json:"isFinal"`
	MessageID      string            `json:"messageId"`
	Context        map[string]string `json:"context"`
}

// endUserStatus maps the SMS event types of AWS End User Messaging SMS (the
// configuration-set event types, "Event types for SMS, MMS, and voice") to a receipt status.
//
// TEXT_DELIVERED is delivered. TEXT_SUCCESSFUL (accepted by the recipient's carrier),
// TEXT_QUEUED and TEXT_PENDING are intermediate: they prove the attempt was accepted but not
// that it arrived. AWS notes that in some countries TEXT_SUCCESSFUL is the last event there
// is; such a record stays sent, which is final for sending. Every failure type is undelivered
// unless the event says isFinal=false (TEXT_CARRIER_UNREACHABLE and TEXT_UNKNOWN may be
// transient), in which case it is recorded as intermediate and a later event settles it.
var endUserStatus = map[string]sms.ReceiptStatus{
	"TEXT_DELIVERED":           sms.ReceiptDelivered,
	"TEXT_SUCCESSFUL":          sms.ReceiptNone,
	"TEXT_QUEUED":              sms.ReceiptNone,
	"TEXT_PENDING":             sms.ReceiptNone,
	"TEXT_BLOCKED":             sms.ReceiptUndelivered,
	"TEXT_TTL_EXPIRED":         sms.ReceiptUndelivered,
	"TEXT_CARRIER_UNREACHABLE": sms.ReceiptUndelivered,
	"TEXT_INVALID":             sms.ReceiptUndelivered,
	"TEXT_INVALID_MESSAGE":     sms.ReceiptUndelivered,
	"TEXT_CARRIER_BLOCKED":     sms.ReceiptUndelivered,
	"TEXT_UNREACHABLE":         sms.ReceiptUndelivered,
	"TEXT_SPAM":                sms.ReceiptUndelivered,
	"TEXT_UNKNOWN":             sms.ReceiptUndelivered,
	"TEXT_PROTECT_BLOCKED":     sms.ReceiptUndelivered,
}

// ParseEndUserSMS turns one AWS End User Messaging SMS event (the JSON that the configuration
// set's event destination publishes, the SNS message) into a receipt. The attempt reference
// comes from the event's context, where the dispatch worker put it (endusersms.ContextAttemptRef).
// An event that is not an SMS event, names no attempt of ours or cannot be read returns an
// error wrapping ErrPoison. An SMS event type this package does not know is recorded as
// intermediate: it still proves acceptance.
func ParseEndUserSMS(msg []byte) (Receipt, error) {
	if len(msg) > maxEventBytes {
		return Receipt{}, fmt.Errorf("providerevents.parse endusersms: event over %d bytes: %w", maxEventBytes, ErrPoison)
	}
	var ev endUserEvent
	if err := json.Unmarshal(msg, &ev); err != nil {
		// The decoder's message may quote the input: keep only its kind.
		return Receipt{}, fmt.Errorf("providerevents.parse endusersms: not an SMS event (%T): %w", err, ErrPoison)
	}
	if !strings.HasPrefix(ev.EventType, "TEXT_") {
		return Receipt{}, fmt.Errorf("providerevents.parse endusersms: not an SMS event type: %w", ErrPoison)
	}
	status, known := endUserStatus[ev.EventType]
	if status == sms.ReceiptUndelivered && ev.IsFinal != nil && !*ev.IsFinal {
		status = sms.ReceiptNone
	}
	if !known {
		status = sms.ReceiptNone
	}
	rc := Receipt{
		AttemptRef: ev.Context[ContextAttemptRef],
		MessageID:  ev.MessageID,
		Status:     status,
		Provider:   config.SMSEndUserSMS,
		Detail:     safeDetail(ev.EventType),
		// Only compared, never stored: a name longer than a field of ours cannot match.
		ConfigurationSet: ev.Context[ContextConfigurationSet],
	}
	if ev.EventTimestamp > 0 {
		rc.At = time.UnixMilli(ev.EventTimestamp).UTC()
	}
	if err := rc.Validate(); err != nil {
		return Receipt{}, fmt.Errorf("providerevents.parse endusersms: %w", err)
	}
	return rc, nil
}

// ParseSimulator turns the body of a simulator webhook call (simapi.Receipt) into a receipt.
// A body that cannot be read or names no attempt of ours returns an error wrapping ErrPoison.
func ParseSimulator(body []byte) (Receipt, error) {
	if len(body) > maxEventBytes {
		return Receipt{}, fmt.Errorf("providerevents.parse simulator: body over %d bytes: %w", maxEventBytes, ErrPoison)
	}
	var in simapi.Receipt
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		return Receipt{}, fmt.Errorf("providerevents.parse simulator: not a receipt (%T): %w", err, ErrPoison)
	}
	var status sms.ReceiptStatus
	switch in.Status {
	case simapi.StatusDelivered:
		status = sms.ReceiptDelivered
	case simapi.StatusUndelivered:
		status = sms.ReceiptUndelivered
	case simapi.StatusAccepted:
		status = sms.ReceiptNone
	default:
		return Receipt{}, fmt.Errorf("providerevents.parse simulator: unknown status: %w", ErrPoison)
	}
	detail := string(in.Status)
	if in.Reason != "" {
		detail = in.Reason
	}
	provider := config.SMSSimulator
	if in.Provider == config.SMSSimulator2 {
		// The simulator in its second-provider mode: a provider of its own in the chain.
		provider = config.SMSSimulator2
	}
	rc := Receipt{
		AttemptRef: in.ClientRef,
		MessageID:  in.MessageID,
		Status:     status,
		At:         in.At.UTC(),
		Provider:   provider,
		Detail:     safeDetail(detail),
	}
	if err := rc.Validate(); err != nil {
		return Receipt{}, fmt.Errorf("providerevents.parse simulator: %w", err)
	}
	return rc, nil
}
