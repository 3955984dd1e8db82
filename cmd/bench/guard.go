package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/dev/emulator"
	"github.com/resetnotify/resetnotify/shared/awsclient"
	"github.com/resetnotify/resetnotify/shared/dynamostore"
	"github.com/resetnotify/resetnotify/shared/guardstore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// guardBench admits n notifications through the intake service with the abuse guard on, each to
// a destination of its own (so each is a destination's first admission of the day), then n
// more to the same destinations with new keys (each a repeat), and prints the write units the
// notification records consumed (guard_record_write_units_per_admission, table and indexes) apart from those
// the guard's counters consumed (guard_write_units_per_admission), overall and per kind.
func guardBench(ctx context.Context, endpoint string, n int, out io.Writer) error {
	cfg := aws.Config{Region: "us-east-1", Credentials: emulator.LocalCredentials()}
	meter := newCapacityMeter()
	meter.Instrument(&cfg)
	db := awsclient.DynamoDB(cfg, endpoint)
	name, names := benchNames("bench-guard")
	names.Guard = name + "-guard"
	drop, err := createTables(ctx, db, names)
	if err != nil {
		return err
	}
	defer drop()
	limits := notify.DefaultGuardLimits()
	limits.PrefixPerMinute = 0 // the bench's numbers share prefixes; this measures the counters, not the ceiling
	in, err := guardedIntake(db, names, limits)
	if err != nil {
		return err
	}
	// What the meter counted on each table since the last Reset.
	units := func() (guardW, recordW, recordR float64) {
		r := meter.Snapshot()
		_, guardW = r.total(func(k capacityKey) bool { return k.Table == names.Guard })
		recordR, recordW = r.total(func(k capacityKey) bool { return k.Table == names.Notifications })
		return guardW, recordW, recordR
	}
	// Rounds 0 and 1: first-of-day and repeat admissions, prefix ceiling off. Round 2: fresh
	// destinations again with a ceiling too high to refuse, to price the prefix counter.
	var perKind [3]float64
	var guardWrites, recordWrites, reads float64
	for round := range 3 {
		if round == 2 {
			in.Guard = guardstore.New(db, names.Guard, notify.GuardLimits{PerHour: limits.PerHour, PerDay: limits.PerDay,
				PrefixDigits: limits.PrefixDigits, PrefixPerMinute: 1 << 20})
		}
		meter.Reset()
		if err := guardRound(ctx, in, round, n); err != nil {
			return err
		}
		g, w, r := units()
		perKind[round] = g / float64(n)
		if round < 2 {
			guardWrites, recordWrites, reads = guardWrites+g, recordWrites+w, reads+r
		}
	}
	admissions := 2 * n
	per := func(x float64) float64 { return x / float64(admissions) }
	fmt.Fprintf(out, "guard_admissions=%d\n", admissions)
	fmt.Fprintf(out, "guard_record_write_units_per_admission=%.2f\n", per(recordWrites))
	fmt.Fprintf(out, "guard_write_units_per_admission=%.2f\n", per(guardWrites))
	fmt.Fprintf(out, "guard_write_units_per_admission_first_of_day=%.2f\n", perKind[0])
	fmt.Fprintf(out, "guard_write_units_per_admission_repeat=%.2f\n", perKind[1])
	fmt.Fprintf(out, "guard_write_units_per_admission_first_of_day_with_prefix_ceiling=%.2f\n", perKind[2])
	fmt.Fprintf(out, "guard_read_units_per_admission=%.2f\n", per(reads))
	return nil
}

// guardedIntake is an intake over the tables names holds with the abuse guard on, at limits.
func guardedIntake(db *dynamodb.Client, names tables.Names, limits notify.GuardLimits) (*notify.Intake, error) {
	box, hasher, fingerprints, err := intakeKeys()
	if err != nil {
		return nil, err
	}
	return &notify.Intake{
		Store: dynamostore.New(db, names.Notifications), Sealer: box, Hasher: hasher,
		Fingerprints: fingerprints, Queue: &countingQueue{}, Clock: notify.SystemClock{}, Policy: notify.DefaultPolicy(),
		NewID: func() string { return ulid.Make().String() },
		Guard: guardstore.New(db, names.Guard, limits), PrefixDigits: limits.PrefixDigits,
	}, nil
}

// guardRound submits n notifications of round: rounds 0 and 1 go to the same n destinations,
// round 2 to n fresh ones.
func guardRound(ctx context.Context, in *notify.Intake, round, n int) error {
	expires := time.Now().UTC().Add(time.Hour)
	for i := range n {
		_, err := in.Submit(ctx, notify.Request{
			IdempotencyKey: fmt.Sprintf("guard-%d-%d", round, i), EventID: fmt.Sprintf("g%d-%d", round, i),
			Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset, To: fmt.Sprintf("+1555%07d", i+n*(round/2)),
			Locale: "en", Params: map[string]string{notify.ParamCode: "482913"}, ExpiresAt: expires,
		})
		if err != nil {
			return fmt.Errorf("guard bench round %d: %w", round, err)
		}
	}
	return nil
}
