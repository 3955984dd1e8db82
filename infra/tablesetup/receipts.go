package tablesetup

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// ReceiptsTTLAttribute is the receipts table's TTL attribute: when the receipt stops being
// useful evidence for reconciliation, in epoch seconds.
const ReceiptsTTLAttribute = tables.ReceiptTTL

// Receipts returns the definition of the receipts table named name: key attempt_ref, no
// index, no stream, on-demand billing. provider-events writes it; the reconcile worker of a
// provider without a lookup API (AWS End User Messaging SMS) reads it by attempt_ref.
func Receipts(name string) *dynamodb.CreateTableInput {
	return keyedByString(name, tables.ReceiptAttemptRef)
}
