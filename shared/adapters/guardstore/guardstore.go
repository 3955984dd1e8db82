// Package guardstore implements notify.Guard on the DynamoDB guard table: small items, each
// changed only by one conditional UpdateItem, so concurrent admissions never exceed a limit
// and nothing is read and then written. Windows are fixed UTC clock windows, those of the
// notification's admission time whenever it is counted. A destination's hour and day live in
// one item per destination and day ("d#<fp>#<yyyymmdd>", an attribute per hour), with the set
// of the notification IDs counted in it: ADD under "this notification not counted yet and each
// count still below its limit", so counting a notification twice (its creator and a picker-up,
// or an SDK retry of a committed write) counts it once, and the failed condition's old item
// tells "already counted" (admitted) from "full" (refused). A prefix's minute is one item
// ("p#<prefix fp>#<yyyymmddhhmm>") holding the set of destination fingerprints admitted in it;
// a destination joins it only while the set is below the ceiling or already holds it, so the
// ceiling counts distinct destinations exactly under any concurrency, and a second count of the
// same destination adds nothing. The two updates of an admission run concurrently. Every item
// carries a TTL shortly after its window ends. The notification ID counted is whatever the
// caller counts by: the intake counts a key (notify.CountID) before its record is put.
package guardstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// API is the part of the DynamoDB client the guard uses; *dynamodb.Client satisfies it.
type API interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// ttlSlack keeps a counter item this long after its window ends before TTL may remove it.
const ttlSlack = time.Hour

// Store is a notify.Guard over one guard table. It is safe for concurrent use.
type Store struct {
	client API
	table  string
	limits notify.GuardLimits
	seen   *seenToday
	// counted holds the count IDs this instance counted and admitted today: counting one
	// again would find it counted and answer admitted, so a repeat of the key on this instance
	// (a replay) skips the guard's requests.
	counted *seenToday
}

var _ notify.Guard = (*Store)(nil)

// New returns a guard over the table named table that applies limits.
func New(client API, table string, limits notify.GuardLimits) *Store {
	return &Store{client: client, table: table, limits: limits, seen: newSeenToday(maxSeen), counted: newSeenToday(maxSeen)}
}

// Admit counts the notification notificationID to d in the windows of at (a guard item lives
// ttlSlack after its window, longer than notify.RecountAfter):
// in d's destination item and, unless this instance admitted d earlier that day (it is then no
// new destination of the prefix), in its prefix's minute set, the two updates concurrently. A
// notification counted already is admitted without counting. A refusal is a
// *notify.RefusedError. A destination refusal leaves the prefix's set as the concurrent update
// made it (it may hold d: the ceiling over-counts, never under-counts); a prefix refusal after
// the destination was counted sets DestinationCounted, and the caller releases the count. A
// notification this instance counted and admitted on at's day is admitted without a request.
func (s *Store) Admit(ctx context.Context, d notify.Destination, notificationID string, at time.Time) error {
	at = at.UTC()
	if s.counted.has(notificationID, at) {
		return nil
	}
	var prefixErr error
	var wg sync.WaitGroup
	if s.limits.PrefixPerMinute > 0 && !s.seen.has(d.FP, at) {
		wg.Go(func() { prefixErr = s.countPrefix(ctx, d, at) })
	}
	destErr := s.countDestination(ctx, d, notificationID, at)
	wg.Wait()
	var refused *notify.RefusedError
	switch {
	case destErr != nil:
		return destErr
	case errors.As(prefixErr, &refused):
		refused.DestinationCounted = true
		return refused
	case prefixErr != nil:
		// The destination's count stays: it refuses early, never sends more.
		return prefixErr
	}
	s.seen.add(d.FP, at)
	s.counted.add(notificationID, at)
	return nil
}

// Release takes the count of notificationID, at at, back from d's destination item, after the
// prefix refused it. A count the item does not hold is left alone; the prefix's set is left as
// it is.
func (s *Store) Release(ctx context.Context, d notify.Destination, notificationID string, at time.Time) error {
	at = at.UTC()
	ids := expression.Name(tables.GuardCounted)
	expr, err := expression.NewBuilder().
		WithUpdate(expression.Add(expression.Name(tables.GuardDayCount), expression.Value(-1)).
			Add(expression.Name(hourAttr(at)), expression.Value(-1)).
			Delete(ids, expression.Value(stringSet{notificationID}))).
		WithCondition(expression.Contains(ids, notificationID)).
		Build()
	if err != nil {
		return fmt.Errorf("guard.release %s: build: %w", d.FP, err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(destinationKey(d.FP, at)),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("guard.release %s: %w", d.FP, err)
	}
	return nil
}

// countDestination adds notificationID to d's day and hour counts if it is not counted yet and
// both are below their limits. With neither limit set it counts nothing: nothing would read it.
func (s *Store) countDestination(ctx context.Context, d notify.Destination, notificationID string, now time.Time) error {
	day, hour, ids := expression.Name(tables.GuardDayCount), expression.Name(hourAttr(now)), expression.Name(tables.GuardCounted)
	limit, ok := below(s.limits.PerDay, day, s.limits.PerHour, hour)
	if !ok {
		return nil
	}
	update := expression.Add(day, expression.Value(1)).Add(hour, expression.Value(1)).
		Add(ids, expression.Value(stringSet{notificationID})).
		Set(expression.Name(tables.GuardTTL), expression.Value(ttlAt(nextDay(now))))
	expr, err := expression.NewBuilder().WithUpdate(update).
		WithCondition(expression.Not(expression.Contains(ids, notificationID)).And(limit)).Build()
	if err != nil {
		return fmt.Errorf("guard.admit %s: build: %w", d.FP, err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(destinationKey(d.FP, now)),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if isConditionFailed(err) {
		return s.destinationRefusal(err, d, notificationID, now)
	}
	if err != nil {
		return fmt.Errorf("guard.admit %s: %w", d.FP, err)
	}
	return nil
}

// destinationRefusal reads the item a failed destination update returned: nil when it holds
// notificationID (counted already: admitted), else a refusal naming the limit hit, the day's
// when the day is full (its window ends later), else the hour's.
func (s *Store) destinationRefusal(err error, d notify.Destination, notificationID string, now time.Time) error {
	refused := &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: nextHour(now).Sub(now),
		DestinationFP: d.FP, CountryCode: d.CountryCode}
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		var counted []string
		if attributevalue.Unmarshal(ccf.Item[tables.GuardCounted], &counted) == nil && slices.Contains(counted, notificationID) {
			return nil
		}
		if n, nerr := number(ccf.Item, tables.GuardDayCount); nerr == nil && s.limits.PerDay > 0 && n >= s.limits.PerDay {
			refused.Reason, refused.RetryAfter = notify.RefusedDestinationDay, nextDay(now).Sub(now)
		}
	}
	return refused
}

// countPrefix adds d to its prefix's set of destinations this minute, if the set holds it
// already or is still below the ceiling.
func (s *Store) countPrefix(ctx context.Context, d notify.Destination, now time.Time) error {
	fps := expression.Name(tables.GuardDestinations)
	end := now.Truncate(time.Minute).Add(time.Minute)
	expr, err := expression.NewBuilder().
		WithUpdate(expression.Add(fps, expression.Value(stringSet{d.FP})).
			Set(expression.Name(tables.GuardTTL), expression.Value(ttlAt(end)))).
		WithCondition(expression.Or(expression.AttributeNotExists(fps), expression.Contains(fps, d.FP),
			fps.Size().LessThan(expression.Value(s.limits.PrefixPerMinute)))).
		Build()
	if err != nil {
		return fmt.Errorf("guard.prefix %s: build: %w", d.PrefixFP, err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(prefixKey(d.PrefixFP, now)),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if isConditionFailed(err) {
		return &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: end.Sub(now),
			DestinationFP: d.FP, CountryCode: d.CountryCode}
	}
	if err != nil {
		return fmt.Errorf("guard.prefix %s: %w", d.PrefixFP, err)
	}
	return nil
}

// stringSet marshals as a DynamoDB string set (SS), which ADD merges into a stored set.
type stringSet []string

// MarshalDynamoDBAttributeValue returns the set.
func (s stringSet) MarshalDynamoDBAttributeValue() (ddbtypes.AttributeValue, error) {
	return &ddbtypes.AttributeValueMemberSS{Value: s}, nil
}

// below is the condition "each set limit is not reached yet"; ok is false when no limit is
// set.
func below(dayLimit int, day expression.NameBuilder, hourLimit int, hour expression.NameBuilder) (expression.ConditionBuilder, bool) {
	var conds []expression.ConditionBuilder
	for _, l := range []struct {
		limit int
		name  expression.NameBuilder
	}{{dayLimit, day}, {hourLimit, hour}} {
		if l.limit > 0 {
			conds = append(conds, expression.Or(expression.AttributeNotExists(l.name), l.name.LessThan(expression.Value(l.limit))))
		}
	}
	switch len(conds) {
	case 0:
		return expression.ConditionBuilder{}, false
	case 1:
		return conds[0], true
	}
	return expression.And(conds[0], conds[1]), true
}

func destinationKey(fp string, now time.Time) string { return "d#" + fp + "#" + now.Format("20060102") }

func prefixKey(prefixFP string, now time.Time) string {
	return "p#" + prefixFP + "#" + now.Format("200601021504")
}

func hourAttr(now time.Time) string { return tables.GuardHourPrefix + now.Format("15") }

func nextHour(now time.Time) time.Time { return now.Truncate(time.Hour).Add(time.Hour) }

func nextDay(now time.Time) time.Time {
	y, m, d := now.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// ttlAt is the TTL, in epoch seconds as DynamoDB requires, of a window ending at windowEnd.
func ttlAt(windowEnd time.Time) int64 { return windowEnd.Add(ttlSlack).Unix() }

func key(k string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{tables.GuardKey: &ddbtypes.AttributeValueMemberS{Value: k}}
}

func number(item map[string]ddbtypes.AttributeValue, name string) (int, error) {
	var n int
	if err := attributevalue.Unmarshal(item[name], &n); err != nil || item[name] == nil {
		return 0, fmt.Errorf("counter %s missing or not a number", name)
	}
	return n, nil
}

func isConditionFailed(err error) bool {
	var cf *ddbtypes.ConditionalCheckFailedException
	return errors.As(err, &cf)
}
