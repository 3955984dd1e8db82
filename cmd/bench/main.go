// Command bench measures resetnotify against one DynamoDB Local and prints one `name=value`
// line per number, so `make bench` output can be read by people and by scripts alike.
//
// The admission benchmark runs the same number of operations with the same concurrency twice
// against one table: first raw conditional PutItem calls of an item shaped like a notification,
// then admissions through the whole intake handler (validation, fingerprint, sealing,
// conditional put, status view). The queue is an in-memory recorder, so the ratio compares our
// code with the database and not with the SQS emulator. The goal is a ratio of at least 0.8:
// the database, not our code, is the limit.
//
// The dispatch benchmark (dispatch.go) then measures the dispatch side against DynamoDB Local,
// moto and an in-process SMS simulator, with the workers built by the Lambda functions' wiring:
// dispatch throughput through the dispatch handler at zero provider latency
// (dispatch_notifications_per_s), and the AWS requests per notification, counted by an SDK
// middleware (awsclient.Counter) from admission to the end, on the happy path and under the
// fault matrix's provider mix (requests_per_notification_happy, _fault_mix, and a
// per-operation _breakdown line each). The replay benchmark (replay.go) counts the AWS requests
// of one replay (requests_per_replay, goal 1) and the dispatch messages that 64 concurrent
// duplicates of one request put on the queue (dispatch_messages_per_64_duplicates, goal at
// most 2). The guard benchmark (guard.go) prices the abuse guard in DynamoDB write units, from
// ReturnConsumedCapacity: write_units_per_admission (the notification record and its indexes)
// apart from guard_write_units_per_admission (the guard's counters). -mode admission, dispatch,
// replay or guard runs one of them.
//
// It needs RESETNOTIFY_DYNAMODB_ENDPOINT and, for dispatch and replay, RESETNOTIFY_SQS_ENDPOINT (both set
// by `go run ./cmd/devstack exec --`).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"github.com/resetnotify/resetnotify/shared/seal"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	mode := fs.String("mode", "all", "which benchmarks to run: all, admission, dispatch, replay, guard, floor, cost or coldstart")
	ops := fs.Int("ops", 2000, "admission: operations per measured phase")
	workers := fs.Int("concurrency", 8, "admission: concurrent callers")
	happy := fs.Int("dispatch-n", 400, "dispatch: notifications pumped through the dispatch handler for throughput")
	fault := fs.Int("fault-n", 200, "dispatch: notifications run under the fault mix")
	pollers := fs.Int("pollers", 4, "dispatch: concurrent receivers on the dispatch queue")
	replays := fs.Int("replays", 200, "replay: sequential replays measured")
	guarded := fs.Int("guard-n", 200, "guard: destinations admitted twice each with the abuse guard on")
	floorN := fs.Int("floor-n", 2000, "floor: notifications dispatched per phase (ours and raw)")
	floorBatches := fs.Int("floor-batches", 2, "floor: batches handled at once")
	templatePath := fs.String("template", "template.yaml", "cost: the SAM template (memory size, architecture)")
	costN := fs.Int("cost-n", 200, "cost: notifications taken from admission to delivered for capacity, logs and cost")
	coldRuns := fs.Int("coldstart-runs", 5, "coldstart: process starts per function (the median is reported)")
	jsonPath := fs.String("json", "bin/bench.json", "write every name=value figure as JSON here too (empty: do not)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	results := newResults(out)
	out = results
	defer func() {
		if err == nil && *jsonPath != "" {
			err = results.save(*jsonPath, *mode)
		}
	}()
	if *ops < 100 || *workers < 1 {
		return errors.New("need -ops >= 100 and -concurrency >= 1")
	}
	if *happy < 10 || *fault < 10 || *pollers < 1 || *replays < 1 {
		return errors.New("need -dispatch-n >= 10, -fault-n >= 10, -pollers >= 1 and -replays >= 1")
	}
	runAdmission, runDispatch := *mode == "all" || *mode == "admission", *mode == "all" || *mode == "dispatch"
	runReplay := *mode == "all" || *mode == "replay"
	runGuard := *mode == "all" || *mode == "guard"
	runCost := *mode == "all" || *mode == "cost"
	runFloor := *mode == "all" || *mode == "floor"
	if *mode == "coldstart" {
		// Builds and starts the bootstraps; needs no emulator.
		return coldStartBench(ctx, *coldRuns, out)
	}
	if !runAdmission && !runDispatch && !runReplay && !runCost && !runFloor && !runGuard {
		return fmt.Errorf("unknown -mode %q: want all, admission, dispatch, replay, guard, floor, cost or coldstart", *mode)
	}
	endpoint := os.Getenv("RESETNOTIFY_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		return errors.New("RESETNOTIFY_DYNAMODB_ENDPOINT is not set: run through `go run ./cmd/devstack exec --` (make bench does)")
	}
	if runAdmission {
		if err := admission(ctx, endpoint, *ops, *workers, out); err != nil {
			return err
		}
	}
	if runGuard {
		if err := guardBench(ctx, endpoint, *guarded, out); err != nil {
			return err
		}
	}
	if runFloor {
		if err := dispatchFloorBench(ctx, endpoint, *floorN, *floorBatches, out); err != nil {
			return err
		}
	}
	if !runDispatch && !runReplay && !runCost {
		return nil
	}
	sqsEndpoint := os.Getenv("RESETNOTIFY_SQS_ENDPOINT")
	if sqsEndpoint == "" {
		return errors.New("RESETNOTIFY_SQS_ENDPOINT is not set: run through `go run ./cmd/devstack exec --` (make bench does)")
	}
	if runDispatch {
		if err := dispatchBench(ctx, endpoint, sqsEndpoint, dispatchOptions{Happy: *happy, Fault: *fault, Pollers: *pollers}, out); err != nil {
			return err
		}
	}
	if runReplay {
		if err := replayBench(ctx, endpoint, sqsEndpoint, *replays, out); err != nil {
			return err
		}
	}
	if *mode == "all" {
		if err := coldStartBench(ctx, *coldRuns, out); err != nil {
			return err
		}
	}
	if runCost {
		return costBench(ctx, endpoint, sqsEndpoint, costOptions{N: *costN, Template: *templatePath}, out)
	}
	return nil
}

func randomKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	return k
}

// intakeKeys returns an intake's sealing box, destination fingerprinter and request
// fingerprinter, each on a fresh random key.
func intakeKeys() (*seal.Box, *seal.Fingerprinter, *seal.RequestFingerprinter, error) {
	keys, err := seal.NewStaticKey(randomKey())
	if err != nil {
		return nil, nil, nil, err
	}
	hasher, err := seal.NewFingerprinter(randomKey())
	if err != nil {
		return nil, nil, nil, err
	}
	fingerprints, err := seal.NewRequestFingerprinter(randomKey())
	if err != nil {
		return nil, nil, nil, err
	}
	return seal.New(keys), hasher, fingerprints, nil
}
