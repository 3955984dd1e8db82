package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// writesBench times, at concurrency 1 and in alternating rounds, single DynamoDB writes and
// writes sent at once (to one table, to two tables), against the database at endpoint, and the
// admission as deployed (guarded, unguarded) against that database and against a stub that
// answers every call at once: what the guard's latency is made of, the database's share and
// ours. Figures are p50 milliseconds named writes_*.
func writesBench(ctx context.Context, endpoint string, ops int, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := localConfig(endpoint)
	db, names, drop, err := deployedTables(ctx, cfg, "bench-wr")
	if err != nil {
		return err
	}
	defer drop()
	put, err := rawPutCall(db, names.Notifications)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	update := func(ctx context.Context, table, key string, b expression.Builder) error {
		expr, err := b.Build()
		if err != nil {
			return err
		}
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{tables.GuardKey: &ddbtypes.AttributeValueMemberS{Value: key}},
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		return err
	}
	dest := func(ctx context.Context, i int) error {
		fp := fmt.Sprintf("%032x", i)
		return update(ctx, names.Guard, "d#w-"+fp+"#"+now.Format("20060102"), rawDestinationUpdate(fp, now))
	}
	prefix := func(ctx context.Context, i int) error {
		fp := fmt.Sprintf("%032x", i)
		return update(ctx, names.Guard, "p#w-"+fp+"#"+now.Format("200601021504"), rawPrefixUpdate(fp, now))
	}
	get := func(ctx context.Context, i int) error {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(names.Notifications), ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: "raw-" + strconv.Itoa(i)}}})
		return err
	}
	shifted := func(f func(context.Context, int) error, by int) func(context.Context, int) error {
		return func(ctx context.Context, i int) error { return f(ctx, by+i) }
	}
	named := []namedCall{
		{"put", shifted(put, 0)},
		{"update", shifted(dest, 0)},
		{"get", get},
		{"two_gets_at_once", atOnce(get, shifted(get, 1))},
		{"two_updates_one_table", atOnce(shifted(dest, 10_000_000), shifted(prefix, 10_000_000))},
		{"update_and_put_two_tables", atOnce(shifted(dest, 40_000_000), shifted(put, 40_000_000))},
		{"three_at_once", atOnce(shifted(dest, 50_000_000), shifted(prefix, 50_000_000), shifted(put, 50_000_000))},
		{"two_updates_then_put", inSeries(atOnce(shifted(dest, 60_000_000), shifted(prefix, 60_000_000)), shifted(put, 60_000_000))},
	}
	parts, err := admissionParts(ctx, cfg, names)
	if err != nil {
		return err
	}
	calls := make([]func(context.Context, int) error, 0, len(named)+len(parts))
	for _, n := range named {
		calls = append(calls, n.call)
	}
	for _, p := range parts {
		calls = append(calls, p.call)
	}
	phases, err := alternateN(ctx, ops, 1, calls)
	if err != nil {
		return err
	}
	for i, p := range phases {
		name := ""
		if i < len(named) {
			name = named[i].name
		} else {
			name = parts[i-len(named)].name
		}
		fmt.Fprintf(out, "writes_%s_p50_ms=%.2f\n", name, ms(p.quantile(0.5)))
	}
	return nil
}

type namedCall struct {
	name string
	call func(context.Context, int) error
}

// admissionParts returns the guarded and unguarded admission against the database and against
// a stub that answers each call at once with an empty success: the difference is the
// database's time. The stub is closed when ctx is.
func admissionParts(ctx context.Context, cfg aws.Config, names tables.Names) ([]namedCall, error) {
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".Query") {
			_, _ = io.WriteString(w, `{"Items":[],"Count":0}`)
			return
		}
		_, _ = io.WriteString(w, `{}`)
	}))
	context.AfterFunc(ctx, stub.Close)
	var calls []namedCall
	for _, c := range []struct {
		cfg    aws.Config
		suffix string
	}{{cfg, ""}, {localConfig(stub.URL), "_stub_db"}} {
		d, err := newDeployed(ctx, c.cfg, names)
		if err != nil {
			return nil, err
		}
		off, err := d.unguarded(ctx)
		if err != nil {
			return nil, err
		}
		calls = append(calls, namedCall{"guarded_admission" + c.suffix, d.admitCall("wr" + c.suffix + "-")},
			namedCall{"unguarded_admission" + c.suffix, off.admitCall("wr-off" + c.suffix + "-")})
	}
	return calls, nil
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
