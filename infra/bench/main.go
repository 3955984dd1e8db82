// Command bench measures resetnotify against one DynamoDB Local and prints one `name=value`
// line per number, so `make bench` output can be read by people and by scripts alike.
//
// Every mode builds what it measures as deployed (asdeployed.go): the functions' own wiring
// from the environment template.yaml gives them at its defaults, local stand-ins only for what
// a deploy creates and for the provider. A figure of another path carries a name of its own
// (guard_off_..., allowlist_off_..., ..._no_cooldown).
//
// -mode admission, dispatch, replay, audit, digest, floor, cost, conversion, country or
// coldstart runs one benchmark (each in the file of its name; docs/benchmarks.md says what each
// measures and its goals); a comma-separated list runs those in one process, in the order of
// -mode all. -mode writes, only when named, times single and concurrent DynamoDB requests. Requests are counted by an SDK middleware (awscount.Counter) and capacity with
// ReturnConsumedCapacity, never by the functions themselves.
//
// It needs RESETNOTIFY_DYNAMODB_ENDPOINT and, for dispatch and replay, RESETNOTIFY_SQS_ENDPOINT
// (both set by `go run ./infra/devstack exec --`).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/resetnotify/resetnotify/shared/seal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// benchFlags are the command's flags.
type benchFlags struct {
	mode                           string
	ops, workers                   int
	happy, fault, pollers, replays int
	floorN, floorBatches           int
	auditN                         int
	templatePath, jsonPath         string
	tracePath                      string
	costN, coldRuns                int
	digestN                        int
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	f, err := parseFlags(args)
	if err != nil {
		return err
	}
	results := newResults(out)
	defer func() {
		if err == nil && f.jsonPath != "" {
			err = results.save(f.jsonPath, f.mode)
		}
	}()
	return runModes(ctx, f, results)
}

func parseFlags(args []string) (benchFlags, error) {
	var f benchFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&f.mode, "mode", "all", "which benchmarks to run: all, or one or a comma-separated list of admission, dispatch, replay, audit, digest, floor, cost, conversion, country and coldstart (in one process, in all's order)")
	fs.IntVar(&f.ops, "ops", 2000, "admission: operations per measured phase (at concurrency 16; a quarter at 1)")
	fs.IntVar(&f.workers, "concurrency", 8, "admission: concurrent callers of the guard-off benchmark")
	fs.IntVar(&f.happy, "dispatch-n", 400, "dispatch: notifications pumped through the dispatch handler for throughput")
	fs.IntVar(&f.fault, "fault-n", 200, "dispatch: notifications run under the fault mix")
	fs.IntVar(&f.pollers, "pollers", 4, "dispatch: concurrent receivers on the dispatch queue")
	fs.IntVar(&f.replays, "replays", 200, "replay: sequential replays measured")
	fs.IntVar(&f.auditN, "audit-n", 2000, "audit: delivered notifications whose 4 audit entries are written in one burst")
	fs.IntVar(&f.floorN, "floor-n", 2000, "floor: notifications dispatched per phase (ours and raw)")
	fs.IntVar(&f.floorBatches, "floor-batches", 2, "floor: batches handled at once")
	fs.StringVar(&f.templatePath, "template", "template.yaml", "cost: the SAM template (memory size, architecture)")
	fs.IntVar(&f.costN, "cost-n", 200, "cost: notifications taken from admission to delivered for capacity, logs and cost")
	fs.IntVar(&f.digestN, "digest-n", 100000, "digest: audit entries written in the one period digested and verified")
	fs.IntVar(&f.coldRuns, "coldstart-runs", 5, "coldstart: process starts per function (the median is reported)")
	fs.StringVar(&f.tracePath, "trace", "", "conversion: replay this trace (JSON lines of infra/trace); default: generate the default day and write it to bin/conversion-trace.jsonl")
	fs.StringVar(&f.jsonPath, "json", "bin/bench.json", "write every name=value figure as JSON here too (empty: do not)")
	err := fs.Parse(args)
	return f, err
}

// modeNames are the benchmarks -mode can name.
var modeNames = []string{"admission", "writes", "dispatch", "replay", "audit", "digest", "floor", "cost", "conversion", "country", "coldstart"}

// runs reports whether -mode selects the benchmark name: all, name, or a comma-separated list
// holding it.
func (f benchFlags) runs(name string) bool {
	return (f.mode == "all" && !slices.Contains(namedOnly, name)) || slices.Contains(strings.Split(f.mode, ","), name)
}

// namedOnly are the benchmarks -mode all leaves out: they explain a figure, they set none.
var namedOnly = []string{"writes"}

// only reports whether -mode selects no benchmark but those in names.
func (f benchFlags) only(names ...string) bool {
	return f.mode != "all" && !slices.ContainsFunc(strings.Split(f.mode, ","), func(m string) bool { return !slices.Contains(names, m) })
}

// checkMode refuses a -mode naming a benchmark that does not exist.
func (f benchFlags) checkMode() error {
	if f.mode == "all" {
		return nil
	}
	for _, m := range strings.Split(f.mode, ",") {
		if !slices.Contains(modeNames, m) {
			return fmt.Errorf("unknown -mode %q: want all, or one or a comma-separated list of %s", f.mode, strings.Join(modeNames, ", "))
		}
	}
	return nil
}

// runModes runs the benchmarks -mode selects: those on DynamoDB alone first, then those that
// need SQS too.
func runModes(ctx context.Context, f benchFlags, out io.Writer) error {
	if f.ops < 100 || f.workers < 1 {
		return errors.New("need -ops >= 100 and -concurrency >= 1")
	}
	if f.happy < 10 || f.fault < 10 || f.pollers < 1 || f.replays < 1 {
		return errors.New("need -dispatch-n >= 10, -fault-n >= 10, -pollers >= 1 and -replays >= 1")
	}
	if err := f.checkMode(); err != nil {
		return err
	}
	if f.only("coldstart") {
		// Builds and starts the bootstraps; needs no emulator.
		return coldStartBench(ctx, f.coldRuns, out)
	}
	if f.runs("country") {
		// CPU only; needs no emulator.
		if err := countryBench(out, 2000); err != nil || f.only("country") {
			return err
		}
	}
	if f.digestN < 1 {
		return errors.New("need -digest-n >= 1")
	}
	endpoint, err := endpointFromEnv("RESETNOTIFY_DYNAMODB_ENDPOINT")
	if err != nil {
		return err
	}
	if err := runDynamoDBModes(ctx, f, endpoint, out); err != nil {
		return err
	}
	if !f.runs("dispatch") && !f.runs("replay") && !f.runs("cost") {
		if f.runs("coldstart") {
			return coldStartBench(ctx, f.coldRuns, out)
		}
		return nil
	}
	sqsEndpoint, err := endpointFromEnv("RESETNOTIFY_SQS_ENDPOINT")
	if err != nil {
		return err
	}
	return runSQSModes(ctx, f, endpoint, sqsEndpoint, out)
}

// endpointFromEnv returns the emulator endpoint in the environment variable name.
func endpointFromEnv(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is not set: run through `go run ./infra/devstack exec --` (make bench does)", name)
	}
	return v, nil
}

// runDynamoDBModes runs the selected benchmarks that need DynamoDB Local only.
func runDynamoDBModes(ctx context.Context, f benchFlags, endpoint string, out io.Writer) error {
	if f.runs("admission") {
		if err := deployedBench(ctx, endpoint, f.ops, out); err != nil {
			return err
		}
		if err := admission(ctx, endpoint, f.ops, f.workers, out); err != nil {
			return err
		}
	}
	if f.runs("writes") {
		if err := writesBench(ctx, endpoint, f.ops/4, out); err != nil {
			return err
		}
	}
	if f.runs("audit") {
		if err := auditBurst(ctx, endpoint, f.auditN, out); err != nil {
			return err
		}
	}
	if f.runs("digest") {
		if err := digestBench(ctx, endpoint, f.digestN, out); err != nil {
			return err
		}
	}
	if f.runs("floor") {
		if err := dispatchFloorBench(ctx, endpoint, f.floorN, f.floorBatches, out); err != nil {
			return err
		}
	}
	if f.runs("conversion") {
		return conversionBench(ctx, endpoint, f.tracePath, out)
	}
	return nil
}

// runSQSModes runs the selected benchmarks that need moto's SQS too, and with -mode all the
// cold-start benchmark before the cost benchmark (also when a -mode list names it).
func runSQSModes(ctx context.Context, f benchFlags, endpoint, sqsEndpoint string, out io.Writer) error {
	if f.runs("dispatch") {
		if err := dispatchBench(ctx, endpoint, sqsEndpoint, dispatchOptions{Happy: f.happy, Fault: f.fault, Pollers: f.pollers}, out); err != nil {
			return err
		}
	}
	if f.runs("replay") {
		if err := replayBench(ctx, endpoint, sqsEndpoint, f.replays, out); err != nil {
			return err
		}
	}
	if f.runs("coldstart") {
		if err := coldStartBench(ctx, f.coldRuns, out); err != nil {
			return err
		}
	}
	if f.runs("cost") {
		return costBench(ctx, endpoint, sqsEndpoint, costOptions{N: f.costN, Template: f.templatePath}, out)
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
	return intakeKeysSealingWith(randomKey())
}

// intakeKeysSealingWith is intakeKeys with the sealing key sealKey (the workers' key, when they
// must open what the intake seals).
func intakeKeysSealingWith(sealKey []byte) (*seal.Box, *seal.Fingerprinter, *seal.RequestFingerprinter, error) {
	keys, err := seal.NewStaticKey(sealKey)
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
