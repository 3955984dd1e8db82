package tablesetup

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// TTLAttribute is the notifications table's TTL attribute: expires_at plus the status grace,
// in epoch seconds.
const TTLAttribute = tables.AttrTTL

// AuditTTLAttribute is the audit table's TTL attribute, in epoch seconds: drop_after, the end
// of an entry's hot window (its period archived), a digest's or archive item's retention.
const AuditTTLAttribute = tables.AuditDropAfter

// Notifications returns the definition of the notifications table named name: key
// idempotency_key; the sparse KEYS_ONLY GSI due on (due_shard, next_action_at); the sparse
// KEYS_ONLY GSI by_notification on attempted_notification_id; a NEW_AND_OLD_IMAGES stream for
// the audit writer; on-demand billing.
//
// Every index an item is in costs a write unit per change of the item, and two per change of
// the index's key (`make bench` counts them), so: no index on event_id (nothing reads by event),
// and both indexes hold keys only. The sweeper reads each due record itself with a consistent
// GetItem (a read unit is a tenth of the price of a write unit, and the happy path is never
// due); provider-events reads the idempotency key from by_notification and then the record.
// by_notification is keyed on attempted_notification_id, which a record gets when its first
// attempt is leased, so admission writes one index only.
//
// Point-in-time recovery, deletion protection, server-side encryption and TTL are not part of
// CreateTableInput; template.yaml sets the first three and infra/tablesetup.Create enables TTL.
func Notifications(name string) *dynamodb.CreateTableInput {
	in := onDemand(name,
		[]ddbtypes.AttributeDefinition{
			attr(tables.AttrIdempotencyKey, ddbtypes.ScalarAttributeTypeS),
			attr(tables.AttrDueShard, ddbtypes.ScalarAttributeTypeN),
			attr(tables.AttrNextActionAt, ddbtypes.ScalarAttributeTypeS),
			attr(tables.AttrAttemptedNotificationID, ddbtypes.ScalarAttributeTypeS),
		},
		hashKey(tables.AttrIdempotencyKey))
	keysOnly := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly}
	in.GlobalSecondaryIndexes = []ddbtypes.GlobalSecondaryIndex{
		gsi(tables.IndexDue, keysOnly, hashKey(tables.AttrDueShard), rangeKey(tables.AttrNextActionAt)),
		gsi(tables.IndexByNotification, keysOnly, hashKey(tables.AttrAttemptedNotificationID)),
	}
	in.StreamSpecification = &ddbtypes.StreamSpecification{
		StreamEnabled:  aws.Bool(true),
		StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages,
	}
	return in
}

// Audit returns the definition of the audit table named name: key (event_id, seq); one GSI,
// by_write_shard on (write_shard, written_at), projecting every attribute, for the entries
// written before the ledgers (shared/audit, "Ledger": the audit writer lists each batch's
// entries in a ledger item under the table's own key and sets no write_shard, so new entries
// cost the index nothing); on-demand billing. The audit table has no stream: nothing reacts
// to it.
func Audit(name string) *dynamodb.CreateTableInput {
	s := ddbtypes.ScalarAttributeTypeS
	in := onDemand(name,
		[]ddbtypes.AttributeDefinition{
			attr(tables.AuditEventID, s), attr(tables.AuditSeq, s), attr(tables.AuditWriteShard, s), attr(tables.AuditWrittenAt, s),
		},
		hashKey(tables.AuditEventID), rangeKey(tables.AuditSeq))
	in.GlobalSecondaryIndexes = []ddbtypes.GlobalSecondaryIndex{
		gsi(tables.IndexByWriteShard, &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll},
			hashKey(tables.AuditWriteShard), rangeKey(tables.AuditWrittenAt)),
	}
	return in
}

// keyedByString returns an on-demand table named name keyed by the string attribute key alone,
// with no index and no stream.
func keyedByString(name, key string) *dynamodb.CreateTableInput {
	return onDemand(name, []ddbtypes.AttributeDefinition{attr(key, ddbtypes.ScalarAttributeTypeS)}, hashKey(key))
}

// onDemand returns an on-demand table named name with the attributes attrs and the key key.
func onDemand(name string, attrs []ddbtypes.AttributeDefinition, key ...ddbtypes.KeySchemaElement) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: attrs,
		KeySchema:            key,
	}
}

func attr(name string, typ ddbtypes.ScalarAttributeType) ddbtypes.AttributeDefinition {
	return ddbtypes.AttributeDefinition{AttributeName: aws.String(name), AttributeType: typ}
}

func hashKey(name string) ddbtypes.KeySchemaElement {
	return ddbtypes.KeySchemaElement{AttributeName: aws.String(name), KeyType: ddbtypes.KeyTypeHash}
}

func rangeKey(name string) ddbtypes.KeySchemaElement {
	return ddbtypes.KeySchemaElement{AttributeName: aws.String(name), KeyType: ddbtypes.KeyTypeRange}
}

func gsi(name string, projection *ddbtypes.Projection, key ...ddbtypes.KeySchemaElement) ddbtypes.GlobalSecondaryIndex {
	return ddbtypes.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: key, Projection: projection}
}
