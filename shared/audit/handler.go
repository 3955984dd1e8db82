package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// Handler is the audit function: it turns a batch of notifications-table stream records into
// audit entries, in order.
type Handler struct {
	Writer *Writer
	// Retention is how long entries are kept; zero means DefaultRetention.
	Retention time.Duration
	// Function and FunctionVersion name the function in each entry's written_by; the request ID
	// comes from the invocation's context.
	Function, FunctionVersion string
	Clock                     notify.Clock
	Log                       *slog.Logger
	// Metrics, when set, receives an AuditEntries count per outcome.
	Metrics *obs.Metrics
}

// Handle processes ev's records in order. Entries of one notification must be written in
// order, and Lambda resumes a stream batch from the lowest reported sequence number, so at the
// first record that fails Handle stops and reports only that record; everything before it is
// done and everything after it will be delivered again. It never returns an error: a failure
// is always a batch item failure.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	actor := Actor{Function: h.Function, Version: h.FunctionVersion}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		actor.RequestID = lc.AwsRequestID
	}
	// An empty list, never nil: {"batchItemFailures": null} makes an emulator's stream poller
	// fail the batch (AWS accepts both).
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	for i, rec := range ev.Records {
		if err := h.record(ctx, rec, actor); err != nil {
			h.log().ErrorContext(ctx, "audit record failed",
				"sequence_number", rec.Change.SequenceNumber, "event_name", rec.EventName,
				"not_processed", len(ev.Records)-i, "error", err)
			resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: rec.Change.SequenceNumber}}
			return resp, nil
		}
	}
	return resp, nil
}

func (h *Handler) record(ctx context.Context, rec events.DynamoDBEventRecord, actor Actor) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	if h.Clock != nil {
		now = h.Clock.Now()
	}
	e, ok, err := Build(rec, Meta{Actor: actor, Retention: h.Retention, Now: now})
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	stored, outcome, err := h.Writer.Write(ctx, e)
	if err != nil {
		return err
	}
	h.log().InfoContext(ctx, "audit entry",
		"outcome", outcome.String(), "event_id", stored.EventID, "notification_id", stored.NotificationID,
		"version", stored.Version, "to_state", string(stored.ToState), "reason", string(stored.Reason),
		"prev_missing", stored.PrevMissing)
	h.Metrics.Emit(map[string]string{"Outcome": outcome.String()},
		obs.Metric{Name: "AuditEntries", Unit: obs.UnitCount, Value: 1})
	return nil
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}
