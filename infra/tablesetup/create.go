// Package tablesetup defines the tables as template.yaml declares them (its template tests
// check each definition against the template) and creates them, for tests, benchmarks and the
// local stack; no Lambda links it. The attribute names are package tables'.
package tablesetup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// API is the part of the DynamoDB client that Create uses; *dynamodb.Client satisfies it.
type API interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Create creates the notifications and audit tables named by names (and the receipts, guard,
// conversion and seal-keys tables when named), waits until each table and its indexes are ACTIVE, and enables
// TTL on ttl (notifications, receipts) and drop_after (audit). A table that already exists
// is accepted as it is, so the local stack can call Create again; TTL that is already enabled
// on the right attribute is left alone. The wait is bounded only by ctx.
func Create(ctx context.Context, client API, names tables.Names) error {
	type spec struct {
		in  *dynamodb.CreateTableInput
		ttl string
	}
	specs := []spec{
		{Notifications(names.Notifications), TTLAttribute},
		{Audit(names.Audit), AuditTTLAttribute},
	}
	if names.Receipts != "" {
		specs = append(specs, spec{Receipts(names.Receipts), ReceiptsTTLAttribute})
	}
	if names.Guard != "" {
		specs = append(specs, spec{Guard(names.Guard), GuardTTLAttribute})
	}
	if names.Conversions != "" {
		specs = append(specs, spec{Conversion(names.Conversions), ConversionTTLAttribute})
	}
	if names.SealKeys != "" {
		specs = append(specs, spec{SealKeys(names.SealKeys), SealKeysTTLAttribute})
	}
	for _, s := range specs {
		if _, err := client.CreateTable(ctx, s.in); err != nil {
			var inUse *ddbtypes.ResourceInUseException
			if !errors.As(err, &inUse) {
				return fmt.Errorf("tables.create %s: %w", aws.ToString(s.in.TableName), err)
			}
		}
	}
	for _, s := range specs {
		name := aws.ToString(s.in.TableName)
		if err := waitActive(ctx, client, name); err != nil {
			return fmt.Errorf("tables.create %s: %w", name, err)
		}
		if err := enableTTL(ctx, client, name, s.ttl); err != nil {
			return fmt.Errorf("tables.create %s: %w", name, err)
		}
	}
	return nil
}

// waitActive polls until the table and all its global secondary indexes are ACTIVE.
func waitActive(ctx context.Context, client API, name string) error {
	delay := 50 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		var notFound *ddbtypes.ResourceNotFoundException
		switch {
		case errors.As(err, &notFound):
			// Eventually consistent right after CreateTable in AWS: poll again.
		case err != nil:
			return fmt.Errorf("describe: %w", err)
		case active(out.Table):
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for ACTIVE: %w", ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func active(t *ddbtypes.TableDescription) bool {
	if t == nil || t.TableStatus != ddbtypes.TableStatusActive {
		return false
	}
	for _, g := range t.GlobalSecondaryIndexes {
		if g.IndexStatus != ddbtypes.IndexStatusActive {
			return false
		}
	}
	return true
}

func enableTTL(ctx context.Context, client API, name, attr string) error {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe TTL: %w", err)
	}
	if d := out.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == attr &&
		(d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled || d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
			AttributeName: aws.String(attr),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable TTL on %s: %w", attr, err)
	}
	return nil
}
