package dynamostore

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// item is a notification as stored. Its tags must be the tables.Attr* names; a test checks
// every tag against them, since Go cannot use a constant in a struct tag.
type item struct {
	IdempotencyKey     string `dynamodbav:"idempotency_key"`
	NotificationID     string `dynamodbav:"notification_id"`
	EventID            string `dynamodbav:"event_id"`
	Channel            string `dynamodbav:"channel"`
	Purpose            string `dynamodbav:"purpose"`
	State              string `dynamodbav:"state"`
	Reason             string `dynamodbav:"reason"`
	Version            int64  `dynamodbav:"version"`
	Attempt            int    `dynamodbav:"attempt"`
	CreatedAt          msTime `dynamodbav:"created_at"`
	UpdatedAt          string `dynamodbav:"updated_at"`
	ExpiresAt          msTime `dynamodbav:"expires_at"`
	DispatchDeadline   string `dynamodbav:"dispatch_deadline"`
	PolicyVersion      string `dynamodbav:"policy_version"`
	SafetyMarginMS     int64  `dynamodbav:"safety_margin_ms"`
	RequestFingerprint string `dynamodbav:"request_fingerprint"`
	Owner              string `dynamodbav:"owner,omitempty"`
	Sealed             []byte `dynamodbav:"sealed,omitempty"`
	DestinationFP      string `dynamodbav:"destination_fp,omitempty"`
	Provider           string `dynamodbav:"provider,omitempty"`
	ProviderMessageID  string `dynamodbav:"provider_message_id,omitempty"`
	// AttemptProviders is the provider of each attempt, in order (absent on records leased
	// before it was kept).
	AttemptProviders []string `dynamodbav:"attempt_providers,omitempty"`
	LeaseUntil       msTime   `dynamodbav:"lease_until,omitempty"`
	AttemptedAt      msTime   `dynamodbav:"attempted_at,omitempty"`
	NotFoundAt       msTime   `dynamodbav:"not_found_at,omitempty"`
	// ReconcileCount is absent at 0 (older records hold the 0).
	ReconcileCount int    `dynamodbav:"reconcile_count,omitempty"`
	NextActionAt   string `dynamodbav:"next_action_at,omitempty"`
	// DueShard is a pointer because shard 0 is a real shard; nil keeps it off the due index.
	DueShard     *int   `dynamodbav:"due_shard,omitempty"`
	TTL          int64  `dynamodbav:"ttl,omitempty"`
	LeaseToken   string `dynamodbav:"lease_token,omitempty"`
	WriteToken   string `dynamodbav:"write_token,omitempty"`
	Actor        string `dynamodbav:"actor,omitempty"`
	EarlyReceipt string `dynamodbav:"early_receipt,omitempty"`
	RequeuedAt   msTime `dynamodbav:"requeued_at,omitempty"`
	// AttemptedNotificationID is NotificationID once an attempt was leased (Attempt > 0): the
	// key of the sparse by_notification index. It never changes afterwards, so no later write
	// touches the index.
	AttemptedNotificationID string `dynamodbav:"attempted_notification_id,omitempty"`
	PrefixFP                hexFP  `dynamodbav:"prefix_fp,omitempty"`
	Country                 string `dynamodbav:"country,omitempty"`
	ConvertedAt             string `dynamodbav:"converted_at,omitempty"`
	// DecideBy, DecidedAt and RetryAt are the abuse guard's decision (notify.Record); absent
	// on records admitted without the guard and on those written before it decided per key.
	DecideBy  string `dynamodbav:"decide_by,omitempty"`
	DecidedAt string `dynamodbav:"decided_at,omitempty"`
	RetryAt   string `dynamodbav:"retry_at,omitempty"`
}

// toItem converts a record to its stored form.
func toItem(r notify.Record) item {
	it := item{
		IdempotencyKey:     r.IdempotencyKey,
		NotificationID:     r.NotificationID,
		EventID:            r.EventID,
		Channel:            r.Channel,
		Purpose:            r.Purpose,
		State:              string(r.State),
		Reason:             string(r.Reason),
		Version:            r.Version,
		Attempt:            r.Attempt,
		CreatedAt:          msOf(r.CreatedAt, roundDown),
		UpdatedAt:          tables.FormatTime(r.UpdatedAt),
		ExpiresAt:          msOf(r.ExpiresAt, roundDown),
		DispatchDeadline:   tables.FormatTime(r.DispatchDeadline),
		PolicyVersion:      r.PolicyVersion,
		SafetyMarginMS:     r.SafetyMargin.Milliseconds(),
		RequestFingerprint: r.RequestFingerprint,
		Owner:              r.Owner,
		Sealed:             r.Sealed,
		DestinationFP:      r.DestinationFP,
		Provider:           r.Provider,
		ProviderMessageID:  r.ProviderMessageID,
		AttemptProviders:   storedProviders(r),
		LeaseUntil:         msOf(r.LeaseUntil, roundUp),
		AttemptedAt:        msOf(r.AttemptedAt, roundUp),
		NotFoundAt:         msOf(r.NotFoundAt, roundUp),
		ReconcileCount:     r.ReconcileCount,
		NextActionAt:       tables.FormatTime(r.NextActionAt),
		TTL:                ttlOf(r.PurgeAt),
		LeaseToken:         r.LeaseToken,
		Actor:              r.Actor.String(),
		EarlyReceipt:       formatEarlyReceipt(r.EarlyReceipt),
		RequeuedAt:         msOf(r.RequeuedAt, roundDown),
		PrefixFP:           hexFP(r.PrefixFP),
		Country:            r.Country,
		ConvertedAt:        tables.FormatTime(r.ConvertedAt),
		DecideBy:           tables.FormatTime(r.DecideBy),
		DecidedAt:          tables.FormatTime(r.DecidedAt),
		RetryAt:            tables.FormatTime(r.RetryAt),
	}
	if r.Attempt > 0 {
		it.AttemptedNotificationID = r.NotificationID
	}
	if it.NextActionAt != "" {
		shard := tables.DueShard(r.IdempotencyKey)
		it.DueShard = &shard
	}
	if len(it.Sealed) == 0 {
		it.Sealed = nil
	}
	return it
}

// storedProviders returns what attempt_providers stores for r: nothing when every attempt went
// to r's provider, which notify.Record.Providers completes from the provider alone (a list
// is kept only once the chain failed over).
func storedProviders(r notify.Record) []string {
	for _, p := range r.AttemptProviders {
		if p != r.Provider {
			return r.AttemptProviders
		}
	}
	return nil
}

// ttlOf returns the TTL attribute for a purge time: epoch seconds, rounded up so that a record
// is never removed before its purge time; 0 (absent) for the zero time.
func ttlOf(purgeAt time.Time) int64 {
	if purgeAt.IsZero() {
		return 0
	}
	s := purgeAt.Unix()
	if purgeAt.Nanosecond() > 0 {
		s++
	}
	return s
}

// toRecord converts a stored item to a record. PurgeAt comes back as the TTL second.
func (it item) toRecord() (notify.Record, error) {
	r := notify.Record{
		IdempotencyKey:     it.IdempotencyKey,
		NotificationID:     it.NotificationID,
		EventID:            it.EventID,
		Channel:            it.Channel,
		Purpose:            it.Purpose,
		State:              notify.State(it.State),
		Reason:             notify.Reason(it.Reason),
		Version:            it.Version,
		Attempt:            it.Attempt,
		PolicyVersion:      it.PolicyVersion,
		SafetyMargin:       time.Duration(it.SafetyMarginMS) * time.Millisecond,
		RequestFingerprint: it.RequestFingerprint,
		Owner:              it.Owner,
		Sealed:             it.Sealed,
		DestinationFP:      it.DestinationFP,
		Provider:           it.Provider,
		ProviderMessageID:  it.ProviderMessageID,
		AttemptProviders:   it.AttemptProviders,
		ReconcileCount:     it.ReconcileCount,
		LeaseToken:         it.LeaseToken,
		Actor:              notify.ParseActor(it.Actor),
		PrefixFP:           string(it.PrefixFP), Country: it.Country,
	}
	if it.TTL != 0 {
		r.PurgeAt = time.Unix(it.TTL, 0).UTC()
	}
	if len(r.AttemptProviders) == 0 && r.Attempt > 0 {
		// Not stored when every attempt went to the record's provider (storedProviders).
		r.AttemptProviders = r.Providers()
	}
	errs := it.parseTimes(&r)
	if !r.State.Valid() {
		errs = append(errs, fmt.Errorf("%s: unknown state %q", tables.AttrState, it.State))
	}
	var err error
	if r.EarlyReceipt, err = parseEarlyReceipt(it.EarlyReceipt); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", tables.AttrEarlyReceipt, err))
	}
	if err := errors.Join(errs...); err != nil {
		return notify.Record{}, fmt.Errorf("item %s: %w", it.IdempotencyKey, err)
	}
	return r, nil
}

// ItemFromRecord returns the item that Admit writes for r, for tools that write the table
// directly (the benchmark's raw PutItem, test fixtures).
func ItemFromRecord(r notify.Record) (map[string]ddbtypes.AttributeValue, error) {
	av, err := attributevalue.MarshalMap(toItem(r))
	if err != nil {
		return nil, fmt.Errorf("dynamostore.item %s: %w", r.IdempotencyKey, err)
	}
	return av, nil
}

// RecordFromItem decodes an item of the notifications table, as GetItem, Query or a stream
// image (once converted to the SDK's attribute values) returns it.
func RecordFromItem(av map[string]ddbtypes.AttributeValue) (notify.Record, error) {
	r, _, err := decodeItem(av)
	return r, err
}

// decodeItem is RecordFromItem that also returns the item's write token.
func decodeItem(av map[string]ddbtypes.AttributeValue) (notify.Record, string, error) {
	var it item
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return notify.Record{}, "", fmt.Errorf("dynamostore.record: %w", err)
	}
	r, err := it.toRecord()
	if err != nil {
		return notify.Record{}, "", fmt.Errorf("dynamostore.record: %w", err)
	}
	return r, it.WriteToken, nil
}

// parseTimes sets r's times from it's stored strings and returns a problem per bad one.
func (it item) parseTimes(r *notify.Record) []error {
	var errs []error
	for _, f := range []struct {
		name string
		in   string
		out  *time.Time
	}{
		{tables.AttrCreatedAt, string(it.CreatedAt), &r.CreatedAt},
		{tables.AttrUpdatedAt, it.UpdatedAt, &r.UpdatedAt},
		{tables.AttrExpiresAt, string(it.ExpiresAt), &r.ExpiresAt},
		{tables.AttrDispatchDeadline, it.DispatchDeadline, &r.DispatchDeadline},
		{tables.AttrLeaseUntil, string(it.LeaseUntil), &r.LeaseUntil},
		{tables.AttrAttemptedAt, string(it.AttemptedAt), &r.AttemptedAt},
		{tables.AttrNotFoundAt, string(it.NotFoundAt), &r.NotFoundAt},
		{tables.AttrNextActionAt, it.NextActionAt, &r.NextActionAt},
		{tables.AttrRequeuedAt, string(it.RequeuedAt), &r.RequeuedAt},
		{tables.AttrDecideBy, it.DecideBy, &r.DecideBy},
		{tables.AttrDecidedAt, it.DecidedAt, &r.DecidedAt},
		{tables.AttrRetryAt, it.RetryAt, &r.RetryAt},
		{tables.AttrConvertedAt, it.ConvertedAt, &r.ConvertedAt},
	} {
		t, err := parseStamp(f.in)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
		}
		*f.out = t
	}
	return errs
}
