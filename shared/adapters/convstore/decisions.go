package convstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// decision is a prefix decision as stored, in the decisions partition and in the history.
type decision struct {
	PK       string `dynamodbav:"pk"`
	SK       string `dynamodbav:"sk"`
	PrefixFP string `dynamodbav:"prefix_fp"`
	Until    string `dynamodbav:"until"`
	// Allow is absent from a block, so that the table's policy can tell dispatch's automatic
	// blocks from an allow by the attribute's name (dynamodb:Attributes).
	Allow     bool   `dynamodbav:"allow,omitempty"`
	By        string `dynamodbav:"by"`
	At        string `dynamodbav:"at"`
	Note      string `dynamodbav:"note,omitempty"`
	Sent      int64  `dynamodbav:"sent"`
	Converted int64  `dynamodbav:"converted"`
	TTL       int64  `dynamodbav:"ttl"`
}

func toDecision(b notify.PrefixBlock) decision {
	return decision{PrefixFP: b.PrefixFP, Until: tables.FormatTime(b.Until), Allow: b.Allow, By: b.By,
		At: tables.FormatTime(b.At), Note: b.Note, Sent: b.Counts.Sent, Converted: b.Counts.Converted}
}

func (d decision) toBlock() (notify.PrefixBlock, error) {
	until, err := tables.ParseTime(d.Until)
	if err != nil {
		return notify.PrefixBlock{}, fmt.Errorf("%s: %w", tables.ConversionUntil, err)
	}
	at, err := tables.ParseTime(d.At)
	if err != nil {
		return notify.PrefixBlock{}, fmt.Errorf("%s: %w", tables.ConversionAt, err)
	}
	return notify.PrefixBlock{PrefixFP: d.PrefixFP, Until: until, Allow: d.Allow, By: d.By, At: at, Note: d.Note,
		Counts: notify.ConversionCounts{Sent: d.Sent, Converted: d.Converted}}, nil
}

// Decide writes b in the decisions partition and, once written, in the prefix's history. An
// automatic decision is conditioned on no decision being in force at b.At (none stored, or its
// until passed): it never replaces an operator's decision or extends a block.
func (s *Store) Decide(ctx context.Context, b notify.PrefixBlock) (bool, error) {
	cur := toDecision(b)
	cur.PK, cur.SK, cur.TTL = tables.ConversionDecisionsPK, b.PrefixFP, ttlAfter(b.Until.Add(s.keep))
	in, err := s.put(cur)
	if err != nil {
		return false, fmt.Errorf("convstore.decide %s: %w", b.PrefixFP, err)
	}
	if b.By == notify.BlockedByConversion {
		cond := expression.AttributeNotExists(expression.Name(tables.ConversionPK)).
			Or(expression.Name(tables.ConversionUntil).LessThanEqual(expression.Value(tables.FormatTime(b.At))))
		expr, err := expression.NewBuilder().WithCondition(cond).Build()
		if err != nil {
			return false, fmt.Errorf("convstore.decide %s: %w", b.PrefixFP, err)
		}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	if _, err := s.client.PutItem(ctx, in); err != nil {
		var failed *ddbtypes.ConditionalCheckFailedException
		if errors.As(err, &failed) {
			return false, nil
		}
		return false, fmt.Errorf("convstore.decide %s: %w", b.PrefixFP, err)
	}
	hist := toDecision(b)
	// A random tail keeps two decisions of one instant apart. An automatic block's history
	// has a partition of its own, the only one besides the decisions that dispatch may write.
	pk := historyPK(b.PrefixFP)
	if b.By == notify.BlockedByConversion {
		pk = autoHistoryPK(b.PrefixFP)
	}
	hist.PK, hist.SK, hist.TTL = pk, tables.FormatTime(b.At)+"#"+b.By+"#"+rand.Text()[:8], ttlAfter(b.At.Add(historyTTL))
	if in, err = s.put(hist); err == nil {
		_, err = s.client.PutItem(ctx, in)
	}
	if err != nil {
		return true, fmt.Errorf("convstore.decide %s: history: %w", b.PrefixFP, err)
	}
	return true, nil
}

func (s *Store) put(d decision) (*dynamodb.PutItemInput, error) {
	item, err := attributevalue.MarshalMap(d)
	if err != nil {
		return nil, err
	}
	return &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}, nil
}

// Decisions returns every decision of the decisions partition (one Query, paged).
func (s *Store) Decisions(ctx context.Context) ([]notify.PrefixBlock, error) {
	return s.query(ctx, tables.ConversionDecisionsPK)
}

// History returns every decision ever written on prefixFP, oldest first: the operators' and
// the automatic blocks' histories, merged.
func (s *Store) History(ctx context.Context, prefixFP string) ([]notify.PrefixBlock, error) {
	ops, err := s.query(ctx, historyPK(prefixFP))
	if err != nil {
		return nil, err
	}
	auto, err := s.query(ctx, autoHistoryPK(prefixFP))
	if err != nil {
		return nil, err
	}
	all := append(ops, auto...)
	slices.SortStableFunc(all, func(a, b notify.PrefixBlock) int { return a.At.Compare(b.At) })
	return all, nil
}

func (s *Store) query(ctx context.Context, pk string) ([]notify.PrefixBlock, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(tables.ConversionPK).Equal(expression.Value(pk))).Build()
	if err != nil {
		return nil, fmt.Errorf("convstore.decisions: %w", err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(s.table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}
	var out []notify.PrefixBlock
	for p := dynamodb.NewQueryPaginator(s.client, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("convstore.decisions %s: %w", pk, err)
		}
		var ds []decision
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &ds); err != nil {
			return nil, fmt.Errorf("convstore.decisions %s: %w", pk, err)
		}
		for _, d := range ds {
			b, err := d.toBlock()
			if err != nil {
				return nil, fmt.Errorf("convstore.decisions %s: %w", d.PrefixFP, err)
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// Counts returns the sums of a prefix's ("p#"+fingerprint) hours from since to at, for tools
// and tests.
func (s *Store) Counts(ctx context.Context, pk string, since, at time.Time) (notify.ConversionCounts, error) {
	return s.window(ctx, pk, since, at)
}
