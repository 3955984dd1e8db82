package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestOnlyTheCapacityBenchKeepsAStream: the notifications tables the benchmarks create have
// their stream turned off, those of createTables and of every pipeline but the capacity
// benchmark's, which reads it. DynamoDB Local keeps every stream record of a run, also those of
// deleted tables, and each write to a table with a stream slows with their number: the records
// one mode left slowed every later mode of `make bench` until the dispatch benchmark's fault
// mix missed its deadline (see disableStream).
func TestOnlyTheCapacityBenchKeepsAStream(t *testing.T) {
	db := testenv.DynamoDB(t) // skips or fails as the package documents when there is no emulator
	testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	streaming := func(table string) bool {
		t.Helper()
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		s := out.Table.StreamSpecification
		return s != nil && aws.ToBool(s.StreamEnabled)
	}

	names := tables.Names{Notifications: testenv.UniqueName(t, "stream-n"), Audit: testenv.UniqueName(t, "stream-a")}
	drop, err := createTables(ctx, db, names)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	if streaming(names.Notifications) {
		t.Errorf("createTables: the notifications table %s has its stream on", names.Notifications)
	}

	ddb, sqsEndpoint := os.Getenv(emulator.EnvDynamoDBEndpoint), os.Getenv(emulator.EnvSQSEndpoint)
	for kind, want := range map[string]bool{"fault": false, "replay": false, capacityKind: true} {
		p, err := newPipeline(ctx, ddb, sqsEndpoint, smssim.Config{}, kind)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.close)
		if got := streaming(p.table); got != want {
			t.Errorf("pipeline %q: stream on = %v, want %v", kind, got, want)
		}
	}
}
