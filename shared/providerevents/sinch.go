package providerevents

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/config"
)

// SinchReportType is the type of the one Sinch callback provider-events takes: a delivery
// report for one recipient of an SMS batch (what delivery_report "per_recipient_final" and
// "per_recipient" post). Batch summaries, MMS reports and inbound messages are other types.
const SinchReportType = "recipient_delivery_report_sms"

// sinchReport is the part of a Sinch recipient delivery report that a receipt needs. The
// report also carries recipient (the destination number), operator and applied_originator:
// this type has no field for them, so they are never decoded, kept or logged.
type sinchReport struct {
	Type            string `json:"type"`
	BatchID         string `json:"batch_id"`
	ClientReference string `json:"client_reference"`
	Status          string `json:"status"`
	Code            *int   `json:"code"`
	At              string `json:"at"`
}

// sinchStatus maps the delivery report statuses of the Sinch SMS REST API ("Delivery report
// statuses", lower-cased: the SDKs spell them in capitals) to a receipt status.
//
// Delivered is delivered. Queued and Dispatched are intermediate: Sinch holds the message.
// Aborted, Cancelled, Rejected, Deleted, Failed and Expired are final failures: undelivered.
// Unknown is final for Sinch but says only that the message reached the operator's SMSC and no
// delivery receipt came back: it proves acceptance, not delivery, so it is recorded as
// intermediate and the record stays sent, as for an End User Messaging TEXT_SUCCESSFUL that is
// the last event of its country. A status this table does not know is intermediate too: a
// report for one of our batches still proves that Sinch accepted it.
var sinchStatus = map[string]sms.ReceiptStatus{
	"delivered":  sms.ReceiptDelivered,
	"queued":     sms.ReceiptNone,
	"dispatched": sms.ReceiptNone,
	"unknown":    sms.ReceiptNone,
	"aborted":    sms.ReceiptUndelivered,
	"cancelled":  sms.ReceiptUndelivered,
	"rejected":   sms.ReceiptUndelivered,
	"deleted":    sms.ReceiptUndelivered,
	"failed":     sms.ReceiptUndelivered,
	"expired":    sms.ReceiptUndelivered,
}

// ParseSinch turns the body of a Sinch delivery report callback (type
// recipient_delivery_report_sms) into a receipt for provider sinch: the batch ID is the
// message ID that dispatch recorded, the client reference the attempt reference it sent with
// the batch, and the detail the status and Sinch's status code (e.g. "Failed:402"). A body
// that is over 8 KiB, is not such a report, has no batch ID or status, or names no attempt of
// ours returns an error wrapping ErrPoison that never quotes the body.
func ParseSinch(body []byte) (Receipt, error) {
	if len(body) > maxEventBytes {
		return Receipt{}, fmt.Errorf("providerevents.parse sinch: body over %d bytes: %w", maxEventBytes, ErrPoison)
	}
	var in sinchReport
	if err := json.Unmarshal(body, &in); err != nil {
		// The decoder's message may quote the input: keep only its kind.
		return Receipt{}, fmt.Errorf("providerevents.parse sinch: not a delivery report (%T): %w", err, ErrPoison)
	}
	if in.Type != SinchReportType {
		return Receipt{}, fmt.Errorf("providerevents.parse sinch: not a recipient delivery report of an SMS: %w", ErrPoison)
	}
	if in.BatchID == "" || in.Status == "" {
		return Receipt{}, fmt.Errorf("providerevents.parse sinch: no batch ID or no status: %w", ErrPoison)
	}
	status, known := sinchStatus[strings.ToLower(in.Status)]
	if !known {
		status = sms.ReceiptNone
	}
	detail := in.Status
	if in.Code != nil {
		detail += ":" + strconv.Itoa(*in.Code)
	}
	rc := Receipt{
		AttemptRef: in.ClientReference,
		MessageID:  in.BatchID,
		Status:     status,
		Provider:   config.SMSSinch,
		Detail:     safeDetail(detail),
	}
	if in.At != "" {
		at, err := time.Parse(time.RFC3339Nano, in.At)
		if err != nil {
			return Receipt{}, fmt.Errorf("providerevents.parse sinch: the report's time is not ISO-8601: %w", ErrPoison)
		}
		rc.At = at.UTC()
	}
	if err := rc.Validate(); err != nil {
		return Receipt{}, fmt.Errorf("providerevents.parse sinch: %w", err)
	}
	return rc, nil
}
