package tablesetup

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// GuardTTLAttribute is the guard table's TTL attribute: the end of the counter's window plus
// an hour, in epoch seconds.
const GuardTTLAttribute = tables.GuardTTL

// Guard returns the definition of the guard table named name: key counter_key, no index, no
// stream (its items are not evidence), on-demand billing. Only intake reads and writes it.
func Guard(name string) *dynamodb.CreateTableInput {
	return keyedByString(name, tables.GuardKey)
}
