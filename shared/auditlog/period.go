package auditlog

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// PeriodItems yields, decoded by decode, the items of the audit table's partition eventID
// (one per period: the digests', the archive's) whose period starts in [from, to) (a zero
// bound is open), in period order, or newest first when forward is false, with a consistent
// read. Its errors begin with op. It stops at the first item decode refuses, after yielding
// that error.
func PeriodItems[T any](ctx context.Context, db QueryAPI, table, eventID string, from, to time.Time, forward bool,
	decode func(map[string]ddbtypes.AttributeValue) (T, error), op string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		key := expression.Key(tables.AuditEventID).Equal(expression.Value(eventID))
		lo, hi := tables.FormatTime(from), tables.FormatTime(to.Add(-time.Nanosecond))
		switch {
		case !from.IsZero() && !to.IsZero():
			key = key.And(expression.Key(tables.AuditSeq).Between(expression.Value(lo), expression.Value(hi)))
		case !from.IsZero():
			key = key.And(expression.Key(tables.AuditSeq).GreaterThanEqual(expression.Value(lo)))
		case !to.IsZero():
			key = key.And(expression.Key(tables.AuditSeq).LessThanEqual(expression.Value(hi)))
		}
		expr, err := expression.NewBuilder().WithKeyCondition(key).Build()
		if err != nil {
			yield(zero, fmt.Errorf("%s: %w", op, err))
			return
		}
		p := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{
			TableName: aws.String(table), KeyConditionExpression: expr.KeyCondition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(forward),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(zero, fmt.Errorf("%s: %w", op, err))
				return
			}
			for _, item := range page.Items {
				v, err := decode(item)
				if !yield(v, err) || err != nil {
					return
				}
			}
		}
	}
}
