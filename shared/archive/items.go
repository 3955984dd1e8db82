package archive

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Items yields the archive items whose period starts in [from, to) (a zero bound is open), in
// period order, or newest first when forward is false, with a consistent read.
func Items(ctx context.Context, db auditlog.QueryAPI, table string, from, to time.Time, forward bool) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		key := expression.Key(tables.AuditEventID).Equal(expression.Value(tables.ArchiveEventID))
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
			yield(Item{}, fmt.Errorf("archive.items: %w", err))
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
				yield(Item{}, fmt.Errorf("archive.items: %w", err))
				return
			}
			for _, raw := range page.Items {
				it, err := ItemFromAttributes(raw)
				if !yield(it, err) || err != nil {
					return
				}
			}
		}
	}
}
