package tables

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TTLAttribute is the notifications table's TTL attribute: expires_at plus the status grace,
// in epoch seconds.
const TTLAttribute = AttrTTL

// AuditTTLAttribute is the audit table's TTL attribute: the end of the retention period, in
// epoch seconds.
const AuditTTLAttribute = AuditRetainUntil

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
// CreateTableInput; template.yaml sets the first three and dev/tablesetup.Create enables TTL.
func Notifications(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String(AttrIdempotencyKey), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrDueShard), AttributeType: ddbtypes.ScalarAttributeTypeN},
			{AttributeName: aws.String(AttrNextActionAt), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrAttemptedNotificationID), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(AttrIdempotencyKey), KeyType: ddbtypes.KeyTypeHash},
		},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{
			{
				IndexName: aws.String(IndexDue),
				KeySchema: []ddbtypes.KeySchemaElement{
					{AttributeName: aws.String(AttrDueShard), KeyType: ddbtypes.KeyTypeHash},
					{AttributeName: aws.String(AttrNextActionAt), KeyType: ddbtypes.KeyTypeRange},
				},
				Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
			},
			{
				IndexName: aws.String(IndexByNotification),
				KeySchema: []ddbtypes.KeySchemaElement{
					{AttributeName: aws.String(AttrAttemptedNotificationID), KeyType: ddbtypes.KeyTypeHash},
				},
				Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
			},
		},
		StreamSpecification: &ddbtypes.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages,
		},
	}
}

// Audit returns the definition of the audit table named name: key (event_id, seq); GSI by_day
// on (day, at) for time-range exports, projecting every attribute; GSI by_write_day on
// (write_day, written_at) for the digest step, projecting the hash, the notification ID and
// retain_until; on-demand billing. Digest items carry none of the index keys, so neither index
// holds them. The audit table has no stream: nothing reacts to it.
func Audit(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String(AuditEventID), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AuditSeq), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AuditDay), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AuditAt), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AuditWriteDay), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AuditWrittenAt), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(AuditEventID), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(AuditSeq), KeyType: ddbtypes.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{
			{
				IndexName: aws.String(IndexByDay),
				KeySchema: []ddbtypes.KeySchemaElement{
					{AttributeName: aws.String(AuditDay), KeyType: ddbtypes.KeyTypeHash},
					{AttributeName: aws.String(AuditAt), KeyType: ddbtypes.KeyTypeRange},
				},
				Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll},
			},
			{
				IndexName: aws.String(IndexByWriteDay),
				KeySchema: []ddbtypes.KeySchemaElement{
					{AttributeName: aws.String(AuditWriteDay), KeyType: ddbtypes.KeyTypeHash},
					{AttributeName: aws.String(AuditWrittenAt), KeyType: ddbtypes.KeyTypeRange},
				},
				Projection: &ddbtypes.Projection{
					ProjectionType:   ddbtypes.ProjectionTypeInclude,
					NonKeyAttributes: []string{AuditHash, AuditNotificationID, AuditRetainUntil},
				},
			},
		},
	}
}
