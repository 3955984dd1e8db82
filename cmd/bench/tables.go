package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/dev/tablesetup"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// benchNames names a benchmark's notifications and audit tables after prefix and the current
// time, and returns that name too, for the tables a benchmark adds.
func benchNames(prefix string) (string, tables.Names) {
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	return name, tables.Names{Notifications: name + "-notifications", Audit: name + "-audit"}
}

// createTables creates the tables names holds, the notifications table without its stream
// (see disableStream), and returns a function that deletes them again, for a defer: it
// deletes with a context of its own, so it still runs once ctx is cancelled.
func createTables(ctx context.Context, db *dynamodb.Client, names tables.Names) (drop func(), err error) {
	if err := tablesetup.Create(ctx, db, names); err != nil {
		return nil, err
	}
	drop = func() { dropTables(context.Background(), db, names) }
	if err := disableStream(ctx, db, names.Notifications); err != nil {
		drop()
		return nil, err
	}
	return drop, nil
}

// disableStream turns off the stream of the notifications table named table (none when table
// is empty), for a benchmark that does not read it; only the capacity benchmark does.
//
// DynamoDB Local keeps every stream record, also those of deleted tables, and each later write
// to any table with a stream takes longer the more records it keeps: after 20,000 of them a
// write took 10 ms instead of 2, after 40,000 20 ms. All the modes of one run share one DynamoDB
// Local, so the records each mode left slowed the writes of every mode after it, whatever it
// measured; in `make bench` the dispatch benchmark's lease writes came to take longer than its
// one-second provider timeout, every attempt ended before its request was written, and the
// fault mix missed its deadline. In AWS a stream costs the writer nothing (no write units, no
// latency), so without it the figures lose only DynamoDB Local's cost.
func disableStream(ctx context.Context, db *dynamodb.Client, table string) error {
	if table == "" {
		return nil
	}
	_, err := db.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: aws.String(table), StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(false)},
	})
	if err != nil {
		return fmt.Errorf("bench: turn off the stream of %s: %w", table, err)
	}
	return nil
}

// dropTables deletes every table names holds, ignoring errors: a benchmark cleans up as best
// it can.
func dropTables(ctx context.Context, db *dynamodb.Client, names tables.Names) {
	for _, t := range []string{names.Notifications, names.Audit, names.Receipts, names.Guard, names.Conversions, names.SealKeys} {
		if t != "" {
			_, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
		}
	}
}
