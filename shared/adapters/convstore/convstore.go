// Package convstore implements notify.ConversionStore on the DynamoDB conversion table. A
// send adds one to its prefix's hourly counter item (one UpdateItem, ADD, no condition) and
// reads the prefix's window back with one Query of at most one item per hour; a conversion
// adds one to the same item of its send's hour. No item counts a country: nothing reads one,
// and the per-country figures are the ConversionSends and Conversions metrics by Country
// (docs/abuse-guards.md). Decisions on prefixes live in one partition, read whole by intake's
// cache, and each is also kept as a history item: an operator's under "d#", an automatic
// block's under "a#", so that IAM keeps dispatch from rewriting who decided what. Items hold keyed prefix fingerprints only,
// never a number.
package convstore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// API is the part of the DynamoDB client the store uses; *dynamodb.Client satisfies it.
type API interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// historyTTL is how long a decision's history item is kept.
const historyTTL = 90 * 24 * time.Hour

// Store is a notify.ConversionStore over one conversion table. It is safe for concurrent use.
type Store struct {
	client API
	table  string
	// keep is how long an hour's counters, or an ended decision, stay: the policy's window
	// and an hour.
	keep time.Duration
}

var _ notify.ConversionStore = (*Store)(nil)

// New returns a store over the table named table that keeps counters for window.
func New(client API, table string, window time.Duration) *Store {
	return &Store{client: client, table: table, keep: window + time.Hour}
}

// Guard returns the conversion guard on the table named table under policy: the counters and
// the decisions in this store, the decisions cached as policy.Refresh says.
func Guard(client API, table string, policy notify.ConversionPolicy, clock notify.Clock) *notify.Conversions {
	return &notify.Conversions{Store: New(client, table, policy.Window), Policy: policy, Clock: clock}
}

// Prefix and hour keys.
func prefixPK(fp string) string      { return "p#" + fp }
func historyPK(fp string) string     { return "d#" + fp }
func autoHistoryPK(fp string) string { return "a#" + fp }
func hourSK(t time.Time) string      { return "h#" + t.UTC().Format("2006010215") }
func ttlAfter(t time.Time) int64     { return t.Add(time.Second - 1).Unix() }
func hourEnd(t time.Time) time.Time  { return t.UTC().Truncate(time.Hour).Add(time.Hour) }
func countKey(pk, sk string) keyItem { return keyItem{PK: pk, SK: sk} }

type keyItem struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
}

// CountSent adds a send at at to prefixFP's hour, then sums prefixFP's hours from since's to
// at's.
func (s *Store) CountSent(ctx context.Context, prefixFP string, at, since time.Time) (notify.ConversionCounts, error) {
	if err := s.add(ctx, prefixPK(prefixFP), at, tables.ConversionSent); err != nil {
		return notify.ConversionCounts{}, fmt.Errorf("convstore.sent: %w", err)
	}
	c, err := s.window(ctx, prefixPK(prefixFP), since, at)
	if err != nil {
		return notify.ConversionCounts{}, fmt.Errorf("convstore.sent: %w", err)
	}
	return c, nil
}

// CountConverted adds a conversion to prefixFP's hour of sentAt.
func (s *Store) CountConverted(ctx context.Context, prefixFP string, sentAt time.Time) error {
	if err := s.add(ctx, prefixPK(prefixFP), sentAt, tables.ConversionConverted); err != nil {
		return fmt.Errorf("convstore.converted: %w", err)
	}
	return nil
}

// add adds one to the counter attr of pk's hour of at, and sets the item's TTL.
func (s *Store) add(ctx context.Context, pk string, at time.Time, attr string) error {
	key, err := attributevalue.MarshalMap(countKey(pk, hourSK(at)))
	if err != nil {
		return err
	}
	expr, err := expression.NewBuilder().WithUpdate(
		expression.Add(expression.Name(attr), expression.Value(1)).
			Set(expression.Name(tables.ConversionTTL), expression.Value(ttlAfter(hourEnd(at).Add(s.keep))))).Build()
	if err != nil {
		return err
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key,
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return fmt.Errorf("add %s %s: %w", attr, hourSK(at), err)
	}
	return nil
}

// counter is an hour's counter item as stored.
type counter struct {
	Sent      int64 `dynamodbav:"sent"`
	Converted int64 `dynamodbav:"converted"`
}

// window sums pk's hours from since's to at's, with one Query (paged, though a day's 25 items
// are far below a page).
func (s *Store) window(ctx context.Context, pk string, since, at time.Time) (notify.ConversionCounts, error) {
	kc := expression.Key(tables.ConversionPK).Equal(expression.Value(pk)).
		And(expression.Key(tables.ConversionSK).Between(expression.Value(hourSK(since)), expression.Value(hourSK(at))))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return notify.ConversionCounts{}, err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}
	var total notify.ConversionCounts
	for p := dynamodb.NewQueryPaginator(s.client, in); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return notify.ConversionCounts{}, fmt.Errorf("query %s: %w", pk, err)
		}
		var hours []counter
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &hours); err != nil {
			return notify.ConversionCounts{}, fmt.Errorf("decode %s: %w", pk, err)
		}
		for _, h := range hours {
			total.Sent += h.Sent
			total.Converted += h.Converted
		}
	}
	return total, nil
}
