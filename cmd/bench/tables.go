package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/dev/tablesetup"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// benchNames names a benchmark's notifications and audit tables after prefix and the current
// time, and returns that name too, for the tables a benchmark adds.
func benchNames(prefix string) (string, tables.Names) {
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	return name, tables.Names{Notifications: name + "-notifications", Audit: name + "-audit"}
}

// createTables creates the tables names holds and returns a function that deletes them again,
// for a defer: it deletes with a context of its own, so it still runs once ctx is cancelled.
func createTables(ctx context.Context, db *dynamodb.Client, names tables.Names) (drop func(), err error) {
	if err := tablesetup.Create(ctx, db, names); err != nil {
		return nil, err
	}
	return func() { dropTables(context.Background(), db, names) }, nil
}

// dropTables deletes every table names holds, ignoring errors: a benchmark cleans up as best
// it can.
func dropTables(ctx context.Context, db *dynamodb.Client, names tables.Names) {
	for _, t := range []string{names.Notifications, names.Audit, names.Receipts, names.Guard, names.Conversions} {
		if t != "" {
			_, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
		}
	}
}
