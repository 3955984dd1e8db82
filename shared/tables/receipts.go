package tables

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ReceiptsTTLAttribute is the receipts table's TTL attribute: when the receipt stops being
// useful evidence for reconciliation, in epoch seconds.
const ReceiptsTTLAttribute = ReceiptTTL

// Receipts returns the definition of the receipts table named name: key attempt_ref, no
// index, no stream, on-demand billing. provider-events writes it; the reconcile worker of a
// provider without a lookup API (AWS End User Messaging SMS) reads it by attempt_ref.
func Receipts(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String(ReceiptAttemptRef), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(ReceiptAttemptRef), KeyType: ddbtypes.KeyTypeHash},
		},
	}
}
