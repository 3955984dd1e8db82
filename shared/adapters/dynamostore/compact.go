package dynamostore

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// msTime is a time that only this package reads, stored as a number of Unix milliseconds:
// 8 bytes by DynamoDB's sizing rules where a tables.FormatTime string takes 30, so the record
// stays under 1 KB (docs/benchmarks.md). created_at, expires_at, lease_until, attempted_at
// and requeued_at are stored so. The times that a DynamoDB expression compares or sorts as
// strings (dispatch_deadline, next_action_at, updated_at) or that other readers parse keep
// tables.FormatTime. A record written before holds the string, which msTime still reads.
//
// Its value is the decimal milliseconds ("" when absent), or the string read from an older
// record.
type msTime string

// Rounding of a time to the millisecond: down, or up where an earlier stored time would be
// unsafe (a lease that seems to end before it does, an attempt that seems to have started
// before it did and so a visibility window that seems to have passed too early).
const (
	roundDown = false
	roundUp   = true
)

// msOf returns t as an msTime, rounded to the millisecond as up says; "" for the zero time.
func msOf(t time.Time, up bool) msTime {
	if t.IsZero() {
		return ""
	}
	ms := t.UnixMilli()
	if up && t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return msTime(strconv.FormatInt(ms, 10))
}

// MarshalDynamoDBAttributeValue stores m as a number (a string read from an older record,
// never written back by toItem, stays a string).
func (m msTime) MarshalDynamoDBAttributeValue() (ddbtypes.AttributeValue, error) {
	if _, err := strconv.ParseInt(string(m), 10, 64); err != nil {
		return &ddbtypes.AttributeValueMemberS{Value: string(m)}, nil
	}
	return &ddbtypes.AttributeValueMemberN{Value: string(m)}, nil
}

// UnmarshalDynamoDBAttributeValue reads a number, or the string of an older record.
func (m *msTime) UnmarshalDynamoDBAttributeValue(av ddbtypes.AttributeValue) error {
	switch v := av.(type) {
	case *ddbtypes.AttributeValueMemberN:
		*m = msTime(v.Value)
	case *ddbtypes.AttributeValueMemberS:
		*m = msTime(v.Value)
	case *ddbtypes.AttributeValueMemberNULL:
		*m = ""
	default:
		return fmt.Errorf("a time is a number or a string, not %T", av)
	}
	return nil
}

// parseStamp parses a stored time: Unix milliseconds (an msTime), or a tables.FormatTime
// string (or any RFC 3339 time); the zero time for "".
func parseStamp(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	return tables.ParseTime(s)
}

// hexFP is a keyed fingerprint that only this package reads (prefix_fp), stored as the bytes
// its hex spells: 16 bytes where the hex string takes 32. A value that is not even-length
// lowercase hex (a fixture's, a record written before) is stored and read as a string.
type hexFP string

// MarshalDynamoDBAttributeValue stores the fingerprint's bytes, or the string it is.
func (f hexFP) MarshalDynamoDBAttributeValue() (ddbtypes.AttributeValue, error) {
	b, err := hex.DecodeString(string(f))
	if err != nil || hex.EncodeToString(b) != string(f) {
		return &ddbtypes.AttributeValueMemberS{Value: string(f)}, nil
	}
	return &ddbtypes.AttributeValueMemberB{Value: b}, nil
}

// UnmarshalDynamoDBAttributeValue reads the bytes back as hex, or a string as it is.
func (f *hexFP) UnmarshalDynamoDBAttributeValue(av ddbtypes.AttributeValue) error {
	switch v := av.(type) {
	case *ddbtypes.AttributeValueMemberB:
		*f = hexFP(hex.EncodeToString(v.Value))
	case *ddbtypes.AttributeValueMemberS:
		*f = hexFP(v.Value)
	case *ddbtypes.AttributeValueMemberNULL:
		*f = ""
	default:
		return fmt.Errorf("a fingerprint is bytes or a string, not %T", av)
	}
	return nil
}
