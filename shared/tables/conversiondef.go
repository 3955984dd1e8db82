package tables

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ConversionTTLAttribute is the conversion table's TTL attribute.
const ConversionTTLAttribute = ConversionTTL

// Conversion returns the definition of the conversion table named name: key (pk, sk), no
// index, no stream (counters are not evidence; decisions keep their own history), on-demand
// billing. Intake and dispatch read and write it, and the operator's prefixctl.
func Conversion(name string) *dynamodb.CreateTableInput {
	s := ddbtypes.ScalarAttributeTypeS
	return onDemand(name, []ddbtypes.AttributeDefinition{attr(ConversionPK, s), attr(ConversionSK, s)},
		hashKey(ConversionPK), rangeKey(ConversionSK))
}
