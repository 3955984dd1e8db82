package tablesetup

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// ConversionTTLAttribute is the conversion table's TTL attribute.
const ConversionTTLAttribute = tables.ConversionTTL

// Conversion returns the definition of the conversion table named name: key (pk, sk), no
// index, no stream (counters are not evidence; decisions keep their own history), on-demand
// billing. Intake and dispatch read and write it, and the operator's prefixctl.
func Conversion(name string) *dynamodb.CreateTableInput {
	s := ddbtypes.ScalarAttributeTypeS
	return onDemand(name, []ddbtypes.AttributeDefinition{attr(tables.ConversionPK, s), attr(tables.ConversionSK, s)},
		hashKey(tables.ConversionPK), rangeKey(tables.ConversionSK))
}
