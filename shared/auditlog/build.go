package auditlog

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// DefaultRetention is how long entries are kept when AUDIT_RETENTION_DAYS is not set.
const DefaultRetention = 400 * 24 * time.Hour

// TTL service identity, as DynamoDB Streams reports it on records that TTL removed.
const (
	ttlIdentityType      = "Service"
	ttlIdentityPrincipal = "dynamodb.amazonaws.com"
)

// Actor identifies the audit function invocation that writes an entry (its written_by).
type Actor struct {
	Function  string
	Version   string
	RequestID string
}

// String returns "<function>:<version>/<request ID>".
func (a Actor) String() string { return a.Function + ":" + a.Version + "/" + a.RequestID }

// Meta is what Build needs besides the stream record.
type Meta struct {
	// Actor is the audit function's own invocation: the entry's written_by.
	Actor Actor
	// Retention is added to an entry's at to give retain_until; zero means DefaultRetention.
	Retention time.Duration
	// Now stands in for a REMOVE record's approximate creation time when the record has none.
	Now time.Time
}

// ErrMalformed means a stream record lacks what an audit entry needs (a key, a version, a
// state). Such a record is reported as a batch failure, retried a bounded number of times, and
// then handed to the on-failure destination.
var ErrMalformed = errors.New("malformed stream record")

// Build returns the audit entry for one stream record of the notifications table, without its
// chain fields (PrevHash, Hash, PrevMissing: the Writer sets them). ok is false when the
// record is not a transition: a MODIFY that left the version unchanged. Only the allow-listed
// attributes of the images are read. Its steps: pick the image, read its fields, stamp the
// transition (or the purge), then the day, retention and sequence.
func Build(rec events.DynamoDBEventRecord, m Meta) (e Entry, ok bool, err error) {
	img, from, ok, err := imageOf(rec)
	if !ok {
		return Entry{}, false, err
	}
	e = Entry{FromState: from, WrittenBy: m.Actor.String()}
	key, state, reason, err := readFields(rec, img, &e)
	if err != nil {
		return Entry{}, false, err
	}
	if err := stamp(rec, img, m, &e, state, reason); err != nil {
		return Entry{}, false, err
	}
	e.At = e.At.UTC()
	e.Day = e.At.Format(DayLayout)
	retention := m.Retention
	if retention <= 0 {
		retention = DefaultRetention
	}
	e.RetainUntil = e.At.Add(retention).Unix()
	e.Seq = seqFor(key, e.Version, suffixOf(e), e.NotificationID, false)
	return e, true, nil
}

// imageOf returns the image an entry is built from (the new one, or the old one of a
// removal) and, for a MODIFY, the state it left. ok is false, with a nil error, for a MODIFY
// that left the version unchanged.
func imageOf(rec events.DynamoDBEventRecord) (img image, from notify.State, ok bool, err error) {
	switch events.DynamoDBOperationType(rec.EventName) {
	case events.DynamoDBOperationTypeInsert:
		img = image(rec.Change.NewImage)
	case events.DynamoDBOperationTypeModify:
		img = image(rec.Change.NewImage)
		old := image(rec.Change.OldImage)
		oldVersion, err := old.number(tables.AttrVersion)
		if err != nil {
			return nil, "", false, buildErr(rec, "old image: %w", err)
		}
		newVersion, err := img.number(tables.AttrVersion)
		if err != nil {
			return nil, "", false, buildErr(rec, "new image: %w", err)
		}
		if newVersion == oldVersion {
			return nil, "", false, nil
		}
		if newVersion < oldVersion {
			return nil, "", false, buildErr(rec, "version went back from %d to %d", oldVersion, newVersion)
		}
		if from, err = old.state(); err != nil {
			return nil, "", false, buildErr(rec, "old image: %w", err)
		}
	case events.DynamoDBOperationTypeRemove:
		img = image(rec.Change.OldImage)
	default:
		return nil, "", false, buildErr(rec, "event name %q", rec.EventName)
	}
	if len(img) == 0 {
		return nil, "", false, buildErr(rec, "no image (stream view type must be NEW_AND_OLD_IMAGES)")
	}
	return img, from, true, nil
}

// readFields reads the allow-listed attributes of img into e and returns the record's key,
// state and reason. A missing or malformed attribute, or a missing identity, is an error.
func readFields(rec events.DynamoDBEventRecord, img image, e *Entry) (key string, state notify.State, reason string, err error) {
	var errs []error
	get := func(dst *string, attr string) {
		v, err := img.string(attr)
		errs = append(errs, err)
		*dst = v
	}
	get(&key, tables.AttrIdempotencyKey)
	get(&e.EventID, tables.AttrEventID)
	get(&e.NotificationID, tables.AttrNotificationID)
	get(&e.Provider, tables.AttrProvider)
	get(&e.ProviderMessageID, tables.AttrProviderMessageID)
	get(&e.DestinationFP, tables.AttrDestinationFP)
	get(&e.PolicyVersion, tables.AttrPolicyVersion)
	get(&e.Actor, tables.AttrActor)
	var err1, err2, err3 error
	e.Version, err1 = img.number(tables.AttrVersion)
	e.Attempt, err2 = img.number(tables.AttrAttempt)
	e.SafetyMarginMS, err3 = img.number(tables.AttrSafetyMarginMS)
	errs = append(errs, err1, err2, err3)
	state, err = img.state()
	errs = append(errs, err)
	get(&reason, tables.AttrReason)
	if err := errors.Join(errs...); err != nil {
		return "", "", "", buildErr(rec, "%w", err)
	}
	switch {
	case key == "" || e.EventID == "" || e.NotificationID == "":
		return "", "", "", buildErr(rec, "idempotency key, event ID or notification ID missing")
	case e.Version < 1:
		return "", "", "", buildErr(rec, "version %d", e.Version)
	}
	return key, state, reason, nil
}

// stamp sets e's target state, reason and time: a removal is a purge at the stream record's
// time (its actor made the last transition, not the removal); anything else is the
// transition to state at the record's updated_at.
func stamp(rec events.DynamoDBEventRecord, img image, m Meta, e *Entry, state notify.State, reason string) error {
	if events.DynamoDBOperationType(rec.EventName) == events.DynamoDBOperationTypeRemove {
		e.FromState, e.ToState = state, StatePurged
		e.Reason, e.PurgedBy = purgeReason(rec.UserIdentity)
		e.Actor = ""
		e.At = rec.Change.ApproximateCreationDateTime.Time
		if e.At.IsZero() {
			e.At = m.Now
		}
		return nil
	}
	e.ToState, e.Reason = state, notify.Reason(reason)
	at, err := img.string(tables.AttrUpdatedAt)
	if err == nil {
		e.At, err = tables.ParseTime(at)
	}
	if err != nil || e.At.IsZero() {
		return buildErr(rec, "updated_at missing or not a time")
	}
	return nil
}

// purgeReason tells a TTL removal from any other and names the principal when known.
func purgeReason(id *events.DynamoDBUserIdentity) (notify.Reason, string) {
	if id == nil {
		return ReasonPurgedManual, ""
	}
	if id.Type == ttlIdentityType && id.PrincipalID == ttlIdentityPrincipal {
		return ReasonPurgedTTL, id.PrincipalID
	}
	return ReasonPurgedManual, id.PrincipalID
}

func buildErr(rec events.DynamoDBEventRecord, format string, args ...any) error {
	return fmt.Errorf("audit.build %s %s: %w: %w", rec.EventName, rec.Change.SequenceNumber, ErrMalformed, fmt.Errorf(format, args...))
}

// image reads allow-listed attributes of a stream image. The accessors of aws-lambda-go's
// attribute value panic on a type mismatch, so each read checks the type first.
type image map[string]events.DynamoDBAttributeValue

// string returns the S attribute attr, or "" when absent or NULL.
func (img image) string(attr string) (string, error) {
	v, ok := img[attr]
	if !ok || v.IsNull() {
		return "", nil
	}
	if v.DataType() != events.DataTypeString {
		return "", fmt.Errorf("%s is not a string", attr)
	}
	return v.String(), nil
}

// number returns the N attribute attr as an integer, or 0 when absent or NULL.
func (img image) number(attr string) (int64, error) {
	v, ok := img[attr]
	if !ok || v.IsNull() {
		return 0, nil
	}
	if v.DataType() != events.DataTypeNumber {
		return 0, fmt.Errorf("%s is not a number", attr)
	}
	n, err := strconv.ParseInt(v.Number(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer", attr)
	}
	return n, nil
}

func (img image) state() (notify.State, error) {
	s, err := img.string(tables.AttrState)
	if err != nil {
		return "", err
	}
	if !notify.State(s).Valid() {
		return "", fmt.Errorf("%s is not a known state", tables.AttrState)
	}
	return notify.State(s), nil
}
