package tables

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attributes of the conversion table: the conversion counters and the prefix decisions. The
// key is (ConversionPK, ConversionSK):
//   - ("p#<prefix fingerprint>" or "c#<country>", "h#<yyyymmddhh>"): sends (ConversionSent)
//     and conversions (ConversionConverted) of the UTC hour in which the messages were sent;
//   - (ConversionDecisionsPK, "<prefix fingerprint>"): the decision on a prefix (blocked or, by
//     an operator, allowed until ConversionUntil), one partition read whole by intake;
//   - ("d#<prefix fingerprint>", "<at>#<by>"): every decision ever written, kept as history.
//
// No item holds a number or a prefix's digits; every item has a TTL.
const (
	ConversionPK          = "pk"
	ConversionSK          = "sk"
	ConversionSent        = "sent"
	ConversionConverted   = "converted"
	ConversionUntil       = "until"
	ConversionAllow       = "allow"
	ConversionBy          = "by"
	ConversionAt          = "at"
	ConversionNote        = "note"
	ConversionPrefixFP    = "prefix_fp"
	ConversionTTL         = "ttl"
	ConversionDecisionsPK = "decisions"
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
