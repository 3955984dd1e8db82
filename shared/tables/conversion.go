package tables

// Attributes of the conversion table: the conversion counters and the prefix decisions. The
// key is (ConversionPK, ConversionSK):
//   - ("p#<prefix fingerprint>", "h#<yyyymmddhh>"): sends (ConversionSent) and conversions
//     (ConversionConverted) of the UTC hour in which the messages were sent (no item per
//     country: the per-country figures are metrics, ConversionSends and Conversions by Country);
//   - (ConversionDecisionsPK, "<prefix fingerprint>"): the decision on a prefix (blocked or, by
//     an operator, allowed until ConversionUntil), one partition read whole by intake;
//   - ("d#<prefix fingerprint>", "<at>#<by>#<random>"): every operator's decision, kept as
//     history; ("a#<prefix fingerprint>", the same): every automatic block's, apart so that
//     IAM keeps dispatch out of the operators' ("d#" items of automatic blocks are read too).
//
// No item holds a number or a prefix's digits; every item has a TTL. Items keyed "c#<country>"
// were written before: nothing reads them, and their TTL removes them.
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
