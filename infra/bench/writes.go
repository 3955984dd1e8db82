package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// writesBench times, at concurrency 1 and in alternating rounds, single DynamoDB requests and
// requests sent at once (to one table, to two tables), against the database at endpoint, and
// the admission as deployed, guarded and unguarded, against that database and against a stub
// that answers every call at once: what the guard's latency is made of, the database's share
// and ours. Figures are p50 milliseconds named writes_*.
func writesBench(ctx context.Context, endpoint string, ops int, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := localConfig(endpoint)
	db, names, drop, err := deployedTables(ctx, cfg, "bench-wr")
	if err != nil {
		return err
	}
	defer drop()
	calls, err := rawWriteCalls(db, names)
	if err != nil {
		return err
	}
	stub := stubDB(ctx)
	// The raw calls without a database: what the SDK and the loopback cost each plan.
	stubbed, err := rawWriteCalls(awsclient.DynamoDB(stub, ""), names)
	if err != nil {
		return err
	}
	for _, c := range stubbed {
		if slices.Contains([]string{"put", "three_at_once", "two_updates_then_put"}, c.name) {
			calls = append(calls, namedCall{c.name + "_stub_db", c.call})
		}
	}
	for _, c := range []struct {
		cfg    aws.Config
		suffix string
	}{{cfg, ""}, {stub, "_stub_db"}} {
		parts, err := admissionParts(ctx, c.cfg, names, c.suffix)
		if err != nil {
			return err
		}
		calls = append(calls, parts...)
	}
	fs := make([]func(context.Context, int) error, len(calls))
	for i, c := range calls {
		fs[i] = c.call
	}
	phases, err := alternateN(ctx, ops, 1, fs)
	if err != nil {
		return err
	}
	for i, p := range phases {
		fmt.Fprintf(out, "writes_%s_p50_ms=%.2f\n", calls[i].name, ms(p.quantile(0.5)))
	}
	return nil
}

// namedCall is one measured call and the name its figure carries.
type namedCall struct {
	name string
	call func(context.Context, int) error
}

// rawWriteCalls returns the admission's DynamoDB requests made raw (the record's conditional
// put, the guard's destination and prefix updates, a consistent read), alone, at once and in
// the guarded admission's order. Keys never repeat across calls.
func rawWriteCalls(db *dynamodb.Client, names tables.Names) ([]namedCall, error) {
	put, err := rawPutCall(db, names.Notifications)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	update := func(ctx context.Context, key string, b expression.Builder) error {
		expr, err := b.Build()
		if err != nil {
			return err
		}
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(names.Guard), Key: map[string]ddbtypes.AttributeValue{tables.GuardKey: &ddbtypes.AttributeValueMemberS{Value: key}},
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		return err
	}
	dest := func(ctx context.Context, i int) error {
		fp := fmt.Sprintf("%032x", i)
		return update(ctx, "d#w-"+fp+"#"+now.Format("20060102"), rawDestinationUpdate(fp, now))
	}
	prefix := func(ctx context.Context, i int) error {
		fp := fmt.Sprintf("%032x", i)
		return update(ctx, "p#w-"+fp+"#"+now.Format("200601021504"), rawPrefixUpdate(fp, now))
	}
	get := func(ctx context.Context, i int) error {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(names.Notifications), ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: "raw-" + strconv.Itoa(i)}}})
		return err
	}
	return []namedCall{
		{"put", put},
		{"update", dest},
		{"get", get},
		{"two_gets_at_once", atOnce(get, shifted(get, 1))},
		{"two_updates_one_table", atOnce(shifted(dest, 10_000_000), shifted(prefix, 10_000_000))},
		{"update_and_put_two_tables", atOnce(shifted(dest, 20_000_000), shifted(put, 20_000_000))},
		{"three_at_once", atOnce(shifted(dest, 30_000_000), shifted(prefix, 30_000_000), shifted(put, 30_000_000))},
		{"two_updates_then_put", inSeries(atOnce(shifted(dest, 40_000_000), shifted(prefix, 40_000_000)), shifted(put, 40_000_000))},
	}, nil
}

// admissionParts returns admissions through the intake as deployed over names on cfg, guarded
// and unguarded, their figures named with suffix.
func admissionParts(ctx context.Context, cfg aws.Config, names tables.Names, suffix string) ([]namedCall, error) {
	d, err := newDeployed(ctx, cfg, names)
	if err != nil {
		return nil, err
	}
	off, err := d.unguarded(ctx)
	if err != nil {
		return nil, err
	}
	return []namedCall{{"guarded_admission" + suffix, d.admitCall("wr" + suffix + "-")},
		{"unguarded_admission" + suffix, off.admitCall("wr-off" + suffix + "-")}}, nil
}

// stubDB returns a configuration whose DynamoDB answers every call at once, until ctx ends:
// an empty success, and no items to a Query (the block list's refresh). Admissions against it
// cost our code, the SDK and a loopback HTTP exchange, no database.
func stubDB(ctx context.Context) aws.Config {
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".Query") {
			_, _ = io.WriteString(w, `{"Items":[],"Count":0}`)
			return
		}
		_, _ = io.WriteString(w, `{}`)
	}))
	context.AfterFunc(ctx, stub.Close)
	return localConfig(stub.URL)
}

// shifted returns f on indexes moved by by.
func shifted(f func(context.Context, int) error, by int) func(context.Context, int) error {
	return func(ctx context.Context, i int) error { return f(ctx, by+i) }
}

// atOnce returns a call that makes each of fs at once and waits for all.
func atOnce(fs ...func(context.Context, int) error) func(context.Context, int) error {
	return func(ctx context.Context, i int) error {
		errs := make([]error, len(fs))
		var wg sync.WaitGroup
		for k, f := range fs {
			wg.Go(func() { errs[k] = f(ctx, i) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

// inSeries returns a call that makes each of fs after the other.
func inSeries(fs ...func(context.Context, int) error) func(context.Context, int) error {
	return func(ctx context.Context, i int) error {
		for _, f := range fs {
			if err := f(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
}
