package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/tablesetup"
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
// DynamoDB Local keeps every stream record of a run, also of deleted tables, and each write to
// a table with a stream slows with their number, so one mode's records would slow every mode
// after it; in AWS a stream costs the writer nothing.
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
