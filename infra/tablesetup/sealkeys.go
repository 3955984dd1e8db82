package tablesetup

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// SealKeysTTLAttribute is the seal-keys table's TTL attribute: a week past the last moment a
// data key may seal (seal.KeyRetention), in epoch seconds.
const SealKeysTTLAttribute = tables.SealKeyTTL

// SealKeys returns the definition of the seal-keys table named name: key key_id, no index, no
// stream (nothing reacts to a new data key, and the audit follows the notifications table's
// stream only), on-demand billing. Intake puts one item per data key; dispatch gets it.
func SealKeys(name string) *dynamodb.CreateTableInput {
	return keyedByString(name, tables.SealKeyID)
}
