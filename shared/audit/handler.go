package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// Handler is the audit function: it turns a batch of notifications-table stream records into
// audit entries, in order.
type Handler struct {
	Writer *auditlog.Writer
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
	actor := auditlog.Actor{Function: h.Function, Version: h.FunctionVersion}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		actor.RequestID = lc.AwsRequestID
	}
	// An empty list, never nil: {"batchItemFailures": null} makes an emulator's stream poller
	// fail the batch (AWS accepts both).
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	// One AuditEntries line per outcome per batch (obs.Metrics.Hold) and one summary log line
	// per batch: the entries themselves are the evidence, in the audit table, so a log line per
	// entry (about 500 bytes with its metric) said nothing the table does not.
	h.Metrics.Hold()
	defer h.Metrics.Flush()
	counts := map[auditlog.Outcome]int{}
	defer func() {
		if len(ev.Records) == 0 {
			return
		}
		h.log().InfoContext(ctx, "audit batch", "records", len(ev.Records),
			"written", counts[auditlog.Written], "duplicate", counts[auditlog.Duplicate],
			"first_sequence_number", ev.Records[0].Change.SequenceNumber,
			"last_sequence_number", ev.Records[len(ev.Records)-1].Change.SequenceNumber)
	}()
	// Each record's entry is built once; the batch's ledger item (Writer.Begin) lists their
	// keys, and is written before them.
	built, planned := h.build(ev.Records, actor)
	batch := h.Writer.Begin(planned)
	for i, rec := range ev.Records {
		if err := h.record(ctx, batch, built[i], counts); err != nil {
			h.log().ErrorContext(ctx, "audit record failed",
				"sequence_number", rec.Change.SequenceNumber, "event_name", rec.EventName,
				"not_processed", len(ev.Records)-i, "error", err)
			resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: rec.Change.SequenceNumber}}
			return resp, nil
		}
	}
	return resp, nil
}

// builtEntry is what Build made of one stream record: its entry, or nothing (ok false), or
// the error that record reports.
type builtEntry struct {
	e   auditlog.Entry
	ok  bool
	err error
}

// build builds recs' entries, one Build each, and returns them in order with the entries the
// batch's ledger plans for (those Build made; a record it refuses reports its error in record).
func (h *Handler) build(recs []events.DynamoDBEventRecord, actor auditlog.Actor) ([]builtEntry, []auditlog.Entry) {
	built := make([]builtEntry, len(recs))
	var planned []auditlog.Entry
	for i, rec := range recs {
		e, ok, err := auditlog.Build(rec, auditlog.Meta{Actor: actor, Retention: h.Retention, Now: h.now()})
		built[i] = builtEntry{e: e, ok: ok, err: err}
		if err == nil && ok {
			planned = append(planned, e)
		}
	}
	return built, planned
}

func (h *Handler) now() time.Time {
	if h.Clock != nil {
		return h.Clock.Now()
	}
	return time.Now()
}

func (h *Handler) record(ctx context.Context, batch *auditlog.Batch, b builtEntry, counts map[auditlog.Outcome]int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.err != nil {
		return b.err
	}
	if !b.ok {
		return nil
	}
	stored, outcome, err := batch.Write(ctx, b.e)
	if err != nil {
		return err
	}
	counts[outcome]++
	if stored.PrevMissing {
		// A chain that starts past its first version: worth a line of its own.
		h.log().WarnContext(ctx, "audit entry without its predecessor",
			"event_id", stored.EventID, "notification_id", stored.NotificationID,
			"version", stored.Version, "to_state", string(stored.ToState), "reason", string(stored.Reason))
	}
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
