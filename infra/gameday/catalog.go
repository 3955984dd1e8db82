package gameday

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// rules returns a scenario's Inject that puts rules in force in the proxy for the scenario's
// hold.
func rules(rs ...faultproxy.Rule) func(context.Context, *Exec) error {
	return func(ctx context.Context, x *Exec) error {
		return x.AddRules(ctx, slices.Clone(rs)...)
	}
}

// dynamoWrites are DynamoDB's write operations.
var dynamoWrites = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}

// Scenarios is the game day's catalogue, in the order `make gameday` runs it.
// It is long because it is the catalogue: one literal per scenario, each with its fault, the
// alarms its runbook names and what it proves.
//
//revive:disable-next-line:function-length
func Scenarios() []Scenario {
	return []Scenario{
		{
			Name:   BaselineScenario,
			Takes:  10 * time.Minute,
			Proves: "Under the normal load and no fault, no alarm fires and every invariant holds: the yardstick of every other scenario.",
			Hold:   2 * time.Minute, Rate: 2,
		},
		{
			Name:     "dynamodb-throttling",
			Takes:    9 * time.Minute,
			Proves:   "20 % of DynamoDB requests throttled for 2 minutes, every function's: the SDK's retries, the stream mapping's retries and the conditional writes absorb it; nothing is sent twice or late, nothing sticks, every version has its audit entry, and no alarm fires.",
			Platform: true, Hold: 2 * time.Minute, Rate: 2,
			Inject:    rules(faultproxy.Rule{Service: "dynamodb", Kind: faultproxy.KindThrottle, Rate: 0.2}),
			MinFaults: map[string]int64{"throttle": 20},
		},
		{
			Name:     "dynamodb-lost-writes",
			Takes:    9 * time.Minute,
			Proves:   "5 % of DynamoDB write responses dropped after the write committed: every writer re-reads what it cannot know, so a committed lease or transition is never taken twice.",
			Platform: true, Hold: 2 * time.Minute, Rate: 2,
			Inject:    rules(faultproxy.Rule{Service: "dynamodb", Operations: dynamoWrites, Kind: faultproxy.KindDropResponse, Rate: 0.05}),
			MinFaults: map[string]int64{"drop-response": 3},
		},
		{
			Name:     "sqs-duplicates",
			Takes:    10 * time.Minute,
			Proves:   "10 % of SQS messages delivered twice for 2 minutes: the lease makes a duplicate dispatch message a no-op.",
			Platform: true, Hold: 2 * time.Minute, Rate: 2,
			Inject:    rules(faultproxy.Rule{Service: "sqs", Operations: []string{"SendMessage", "SendMessageBatch"}, Kind: faultproxy.KindSQSDuplicate, Rate: 0.1}),
			MinFaults: map[string]int64{"sqs-duplicate": 5},
		},
		{
			Name: "dispatch-killed",
			// Longer than the others: the runner waits for DispatchErrorsAlarm (5-minute
			// period) to go back to OK.
			Takes:    15 * time.Minute,
			Proves:   "dispatch killed right after its lease committed (before the provider call), 30 % of leases for 2 minutes, 8 kills at most: the lease expires, the record goes to dispatch_unknown and is reconciled, never sent blind; the Lambda errors raise DispatchErrorsAlarm.",
			Platform: true, Hold: 2 * time.Minute, Rate: 2,
			Expect: []string{"DispatchErrorsAlarm"}, Allow: map[string]string{
				"DispatchUnknownBacklogAlarm": "the killed leases wait in dispatch_unknown until reconciled",
				"DeliveryFastBurnAlarm":       "a killed record may expire unresolved",
				"DeliveryPage":                "a killed record may expire unresolved",
			},
			Inject: rules(faultproxy.Rule{Service: "dynamodb", Operations: []string{"UpdateItem"}, Function: "DispatchFunction",
				Match: "LEASE_ACQUIRED", Kind: faultproxy.KindKill, After: true, Rate: 0.3, Limit: 8}),
			MinFaults: map[string]int64{"kill": 3},
		},
		KMSOutage(),
		DigestFailing(),
		Burst(),
		{
			Name:     "stream-batches-failing",
			Takes:    10 * time.Minute,
			Proves:   "the audit function's writes failing for 2 minutes: its stream batches are retried, then sent to AuditFailureQueue and replayed; every version ends with an entry or a visible gap.",
			Platform: true, Hold: 2 * time.Minute, Rate: 2,
			Expect:    []string{"AuditFailureAlarm"},
			Inject:    rules(faultproxy.Rule{Service: "dynamodb", Operations: dynamoWrites, Function: "AuditFunction", Kind: faultproxy.KindError500}),
			MinFaults: map[string]int64{"error500": 5},
		},
		{
			Name:   "provider-down",
			Takes:  25 * time.Minute,
			Proves: "the first provider refusing every connection for 2 minutes: dispatch cools it down after 3 failures in a row and fails over to the second; ProviderCoolDownAlarm fires and clears.",
			Hold:   2 * time.Minute, Rate: 2,
			Expect:    []string{"ProviderCoolDownAlarm"},
			MinFaults: map[string]int64{"provider-connections-refused (window)": 1},
			Inject: func(ctx context.Context, x *Exec) error {
				return x.simFault(ctx, "provider-connections-refused (window)", x.S.Sims[:1], "/control/connections", simapi.Connections{Refuse: true})
			},
			Remove: func(ctx context.Context, x *Exec) error {
				return x.S.Sim(ctx, x.S.Sims[0], http.MethodPost, "/control/connections", simapi.Connections{Refuse: false}, nil)
			},
			Charts: []ChartMetric{{Label: "ProviderCalls simulator2 (Sum)", Metric: "ProviderCalls", Stat: "Sum",
				Dimensions: map[string]string{"Function": "dispatch", "Provider": "simulator2"}}},
		},
		{
			Name:   "lookup-outage",
			Takes:  10 * time.Minute,
			Proves: "every provider's lookup failing for 3 minutes while sends time out after the provider took them: records wait in dispatch_unknown, never re-sent, and settle once lookups answer (or expire unresolved).",
			Hold:   3 * time.Minute, Rate: 2,
			MinFaults: map[string]int64{"lookup-unavailable (window)": 1, "accept-then-timeout": 5},
			Inject: func(ctx context.Context, x *Exec) error {
				return x.simFault(ctx, "lookup-unavailable (window)", x.S.Sims, "/control/lookup", simapi.LookupFault{Mode: "unavailable"})
			},
			During: func(ctx context.Context, x *Exec) {
				// A share of sends whose outcome is unknown: accepted, then no answer.
				l := NewLoad(x.S, x.Scenario.Name+"-unknown", 0.2)
				l.Number = unknownOutcomeNumber(ctx, x)
				x.AddLoad(l)
				l.Run(ctx)
			},
			Remove: func(ctx context.Context, x *Exec) error {
				return x.SimAll(ctx, http.MethodPost, "/control/lookup", simapi.LookupFault{Mode: "normal"})
			},
		},
		DispatchDelayed(),
		ReconcileDown(),
		AuditLate(),
		PumpingVelocity(),
		NegativeControl(),
		Upgrade(),
		{
			Name:   "pumping-conversion",
			Takes:  26 * time.Minute,
			Proves: "a range sent codes nobody uses (24 new destinations in 2 minutes, 12 a minute, none converted): dispatch blocks the prefix after ConversionMinSends and ConversionDropAlarm fires; later requests get 429 prefix-blocked.",
			Hold:   2 * time.Minute, Rate: 1,
			Expect:    []string{"ConversionDropAlarm"},
			MinFaults: map[string]int64{"pumping-requests": 20},
			During: func(ctx context.Context, x *Exec) {
				l := NewLoad(x.S, x.Scenario.Name+"-pump", 12.0/60)
				l.Number, l.ConvertShare = pumpNumber("+121256"), 0
				x.AddLoad(l)
				l.Run(ctx)
				x.CountFault("pumping-requests", int64(len(l.Sent())))
			},
		},
	}
}

// NegativeControl switches the lease's condition off for its own load (no-condition on
// dispatch's writes), delivers each of its dispatch messages twice and holds dispatch's
// updates 1.5 s so that both copies read the record before either takes the lease: a double
// send must follow, and the invariant checks must see it.
func NegativeControl() Scenario {
	return Scenario{
		Name:  "negative-control",
		Takes: 5 * time.Minute,
		Proves: "the checks can fail: with dispatch's conditional writes switched off (no-condition), every dispatch message of its own load delivered twice " +
			"and dispatch's updates held 1.5 s, a notification is sent twice and the runner reports the double send. Passes when it does.",
		Platform: true, NegativeControl: true, Hold: time.Minute, Rate: 0.5,
		MinFaults: map[string]int64{"sqs-duplicate": 1, "no-condition": 1},
		Allow:     map[string]string{"AuditFailureAlarm": "the audit function meets two different records under one version"},
		Inject: func(ctx context.Context, x *Exec) error {
			tag := "gd-" + x.S.RunID + "-negative-control-"
			return x.AddRules(ctx,
				faultproxy.Rule{Service: "sqs", Operations: []string{"SendMessage", "SendMessageBatch"}, Kind: faultproxy.KindSQSDuplicate, Match: tag},
				faultproxy.Rule{Service: "dynamodb", Operations: []string{"UpdateItem"}, Function: "DispatchFunction", Kind: faultproxy.KindLatency, Latency: 1500 * time.Millisecond, Match: tag},
				faultproxy.Rule{Service: "dynamodb", Function: "DispatchFunction", Kind: faultproxy.KindNoCondition, Match: tag})
		},
	}
}

// KMSOutage is KMS answering 500 for a minute, begun by killing a dispatch process and then every
// intake process, so that their new processes must call KMS through it.
func KMSOutage() Scenario {
	return Scenario{
		Name:  "kms-outage",
		Takes: 26 * time.Minute,
		Proves: "KMS answering 500 for 60 s: a warm function seldom calls KMS (one data key per process, decrypted keys cached), " +
			"so a dispatch process, then every intake process, is killed as it begins (intake's once dispatch's kill is counted: intake failing closed leaves dispatch idle) and their new processes must seal (GenerateDataKey) and open (Decrypt) through it, " +
			"and the digest's Sign of that minute fails: admissions fail closed (503, nothing admitted unsealed), sends wait, digests are late, not broken. The report counts the KMS calls hit, by function.",
		Platform: true, Hold: time.Minute, Rate: 2,
		// Admissions answered 503 for the minute of the outage burn the availability budget;
		// intake's killed process is an invocation error.
		Expect: []string{"AdmissionFastBurnAlarm", "AdmissionPage", "IntakeErrorsAlarm"},
		Allow: map[string]string{
			"DigestErrorsAlarm":     "the digest's Sign fails for the minute of the outage",
			"DigestLagAlarm":        "that minute's period is signed late",
			"ArchiveLagAlarm":       "that minute's period is archived late",
			"DispatchErrorsAlarm":   "dispatch's killed process is an invocation error",
			"DeliveryFastBurnAlarm": "dispatch's killed batch returns after the 180-s visibility timeout, past its deadlines",
			"DeliveryPage":          "dispatch's killed batch returns after the 180-s visibility timeout, past its deadlines",
		},
		MinFaults: map[string]int64{"kill": 2, "error500": 2},
		Inject:    kmsOutage,
		// Every intake process killed counts in "kill": the two functions are checked apart.
		Check: func(_ context.Context, x *Exec) []string {
			x.mu.Lock()
			defer x.mu.Unlock()
			var out []string
			for _, fn := range []string{"DispatchFunction", "IntakeFunction"} {
				if x.killed[fn] == 0 {
					out = append(out, fmt.Sprintf("vacuous: no process of %s killed, so none had to call KMS through the outage", fn))
				}
			}
			return out
		},
	}
}

// kmsOutage puts the KMS outage in force function by function, each with the kill that makes
// the function's new process call KMS: dispatch first, and intake only once dispatch was killed
// (or killWait passed), since intake failing closed leaves dispatch no work to be killed at;
// then the digest's calls and any other caller's. Of a request's rules the first outcome
// applies, so the calls hit are counted by function.
func kmsOutage(ctx context.Context, x *Exec) error {
	for _, kill := range []faultproxy.Rule{
		{Service: "dynamodb", Function: "DispatchFunction", Kind: faultproxy.KindKill, After: true, Limit: 1},
		// Every intake process: one left warm seals with its data key through the outage.
		{Service: "dynamodb", Function: "IntakeFunction", Kind: faultproxy.KindKill, After: true, Limit: 1, All: true},
	} {
		err := x.killThen(ctx, kill, faultproxy.Rule{Service: "kms", Function: kill.Function, Kind: faultproxy.KindError500})
		if err != nil {
			return err
		}
	}
	return x.AddRules(ctx,
		faultproxy.Rule{Service: "kms", Function: "DigestFunction", Kind: faultproxy.KindError500},
		faultproxy.Rule{Service: "kms", Kind: faultproxy.KindError500})
}

// killWait bounds the wait for a kill (the load keeps every function busy: seconds), and
// killPoll is how often the proxy's tally is read meanwhile.
var killWait, killPoll = time.Minute, time.Second

// killThen puts kill (a KindKill rule) in force together with rules, and waits, up to killWait,
// until the proxy's tally shows kill's function killed.
func (x *Exec) killThen(ctx context.Context, kill faultproxy.Rule, rules ...faultproxy.Rule) error {
	fn := kill.Function
	if x.Proxy == nil || x.Sabotage == SabotageFaultsOff {
		return x.AddRules(ctx, rules...) // no kill to wait for
	}
	kills := func() (int64, error) {
		c, err := x.Proxy.Counts(ctx)
		var n int64
		for _, f := range c.Faults {
			if f.Kind == faultproxy.KindKill && strings.Contains(f.Function, fn) {
				n += f.Count
			}
		}
		return n, err
	}
	was, err := kills()
	if err != nil {
		return err
	}
	if err := x.AddRules(ctx, append([]faultproxy.Rule{kill}, rules...)...); err != nil {
		return err
	}
	began := time.Now()
	for time.Since(began) < killWait && ctx.Err() == nil {
		if n, err := kills(); err == nil && n > was {
			x.mu.Lock()
			if x.killed == nil {
				x.killed = map[string]int64{}
			}
			x.killed[fn] += n - was
			x.mu.Unlock()
			x.Logf("%s: %s killed (%d processes) %s after its kill rule was set", x.Scenario.Name, fn, n-was, time.Since(began).Round(100*time.Millisecond))
			return nil
		}
		sleep(ctx, killPoll)
	}
	x.Logf("%s: %s not killed within %s; going on (the kill count will say vacuous)", x.Scenario.Name, fn, killWait)
	return nil
}

// DigestFailing is the digest function failing for 3 minutes: every AWS call it makes
// (DynamoDB, KMS, S3) answered 500.
func DigestFailing() Scenario {
	return Scenario{
		Name:  "digest-failing",
		Takes: 10 * time.Minute,
		Proves: "the digest function failing for 3 minutes (every call it makes answered 500): its runs fail (DigestErrorsAlarm), " +
			"its archive step fails every minute (ArchiveErrorsAlarm, 3 of 5 minutes); once healed the periods are closed and archived late, and auditctl verify says late, never broken.",
		Platform: true, Hold: 3 * time.Minute, Rate: 1,
		Expect: []string{"DigestErrorsAlarm", "ArchiveErrorsAlarm"}, Allow: map[string]string{
			"DigestLagAlarm":  "no period is signed while it fails",
			"ArchiveLagAlarm": "no period is archived while it fails",
		},
		Inject:    rules(faultproxy.Rule{Function: "DigestFunction", Kind: faultproxy.KindError500}),
		MinFaults: map[string]int64{"error500": 3},
		Charts:    []ChartMetric{{Label: "DigestsWritten (Sum)", Metric: "DigestsWritten", Stat: "Sum", Dimensions: map[string]string{"Function": "digest"}}},
	}
}

// PumpingVelocity is the pumping burst: 30 new destinations of one prefix in 25 s, from the
// start of a UTC minute (the guard's window), 60 % of them converted so that the conversion
// guard stays out of it.
func PumpingVelocity() Scenario {
	return Scenario{
		Name:   "pumping-velocity",
		Takes:  10 * time.Minute,
		Proves: "an SMS-pumping burst (30 new destinations of one prefix in 25 s, over GuardPrefixPerMinute=20): intake refuses the rest with prefix-rate-limited and PrefixVelocityAlarm fires, then clears.",
		Hold:   90 * time.Second, Rate: 1,
		Expect:    []string{"PrefixVelocityAlarm"},
		MinFaults: map[string]int64{"pumping-requests": 25},
		During: func(ctx context.Context, x *Exec) {
			// The burst (25 s) must fall in one UTC minute, the guard's window: it starts at once
			// in a minute's first half, else at the next minute. It runs to its end even past
			// the hold.
			now := time.Now().UTC()
			if now.Second() >= 30 {
				sleep(ctx, time.Until(now.Truncate(time.Minute).Add(time.Minute+time.Second)))
			}
			l := NewLoad(x.S, x.Scenario.Name+"-pump", 1.2)
			l.Number, l.ConvertShare = pumpNumber(PumpPrefix), 0.6
			x.AddLoad(l)
			burst, cancel := context.WithTimeout(context.WithoutCancel(ctx), 25*time.Second)
			// The pump's codes are reported used for 2 minutes, beside the rest of the scenario.
			conv, stopConv := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			go func() { defer stopConv(); l.ConvertLoop(conv) }()
			l.Run(burst)
			cancel()
			x.CountFault("pumping-requests", int64(len(l.Sent())))
		},
	}
}

// pumpNumber returns fresh destinations in prefix (+1 212 5x: any 5 digits after it).
func pumpNumber(prefix string) func() string {
	return func() string {
		for {
			if to := fmt.Sprintf("%s%05d", prefix, randInt(100_000)); fresh(to) {
				return to
			}
		}
	}
}

// simFault posts body to path on each of sims and counts one fault of kind once each answered;
// under GAMEDAY_SABOTAGE=faults-off it posts and counts nothing, so the scenario is vacuous.
func (x *Exec) simFault(ctx context.Context, kind string, sims []string, path string, body any) error {
	if x.Sabotage == SabotageFaultsOff {
		return nil
	}
	for _, base := range sims {
		if err := x.S.Sim(ctx, base, http.MethodPost, path, body, nil); err != nil {
			return err
		}
	}
	x.CountFault(kind, 1)
	return nil
}

// unknownOutcomeNumber returns fresh destinations whose first send every provider takes and
// never answers (an unknown outcome), and whose later sends it accepts.
func unknownOutcomeNumber(ctx context.Context, x *Exec) func() string {
	return func() string {
		to := NormalNumber()
		_ = x.simFault(ctx, "accept-then-timeout", x.S.Sims, "/control/faults", simapi.Fault{To: to, Modes: []string{"accept_then_timeout", "accept"}})
		return to
	}
}

// DispatchDelayed is the delivery page's scenario: every SQS message delayed past the load's
// deadlines for 3 minutes, so the resets admitted early in it expire unsent.
func DispatchDelayed() Scenario {
	return Scenario{
		Name:  "dispatch-delayed",
		Takes: 31 * time.Minute,
		Proves: "every SQS message (intake's, the sweeper's re-sends, dispatch's retries) delayed 200 s for 3 minutes, past the load's 3-minute deadlines: " +
			"nothing is sent at or after its deadline, the resets admitted early in it expire unsent, and DeliveryFastBurnAlarm and DeliveryPage fire, then clear.",
		Platform: true, Hold: 3 * time.Minute, Rate: 2,
		Expect:    []string{"DeliveryFastBurnAlarm", "DeliveryPage"},
		Inject:    rules(faultproxy.Rule{Service: "sqs", Operations: []string{"SendMessage", "SendMessageBatch"}, Kind: faultproxy.KindSQSDelay, Latency: 200 * time.Second}),
		MinFaults: map[string]int64{"sqs-delay": 100},
	}
}

// ReconcileDown is the reconciliation backlog's scenario: the reconcile function's DynamoDB
// calls failing for 9 minutes while a share of sends end in an unknown outcome.
func ReconcileDown() Scenario {
	return Scenario{
		Name:  "reconcile-down",
		Takes: 26 * time.Minute,
		Proves: "the reconcile function's DynamoDB calls answered 500 for 9 minutes while 0.2/s of sends are taken and never answered: " +
			"those records wait in dispatch_unknown, overdue, never re-sent blind; DispatchUnknownBacklogAlarm fires (two 5-minute periods), " +
			"and once reconcile heals they are settled by lookup and it clears.",
		Platform: true, Hold: 9 * time.Minute, Rate: 1,
		Expect: []string{"DispatchUnknownBacklogAlarm"},
		Allow: map[string]string{
			"DeliveryFastBurnAlarm": "unknowns a lookup finds never accepted expire, settled after their deadlines",
			"DeliveryPage":          "unknowns a lookup finds never accepted expire, settled after their deadlines",
		},
		MinFaults: map[string]int64{"error500": 10, "accept-then-timeout": 20},
		Inject:    rules(faultproxy.Rule{Service: "dynamodb", Function: "ReconcileFunction", Kind: faultproxy.KindError500}),
		During: func(ctx context.Context, x *Exec) {
			l := NewLoad(x.S, x.Scenario.Name+"-unknown", 0.2)
			l.Number = unknownOutcomeNumber(ctx, x)
			x.AddLoad(l)
			l.Run(ctx)
		},
	}
}

// AuditLate is the audit-freshness scenario: the digest function's KMS calls failing for the
// first 3 minutes (no period signed), then its S3 calls for 4 (signed, not archived).
func AuditLate() Scenario {
	return Scenario{
		Name:  "audit-late",
		Takes: 21 * time.Minute,
		Proves: "the digest function's KMS calls answered 500 for 3 minutes, then its S3 calls for 4: no period is signed, so DigestLag passes its bound " +
			"(DigestLagAlarm), then periods are signed but not archived, so ArchiveLag passes its bound (ArchiveLagAlarm); both clear once it heals, and verify says late, never broken.",
		Platform: true, Hold: 7 * time.Minute, Rate: 1,
		Expect: []string{"DigestLagAlarm", "ArchiveLagAlarm"},
		Allow: map[string]string{
			"DigestErrorsAlarm":  "its failed calls fail the digest's runs",
			"ArchiveErrorsAlarm": "its failed S3 calls fail the archive step",
		},
		MinFaults: map[string]int64{"error500": 4},
		Inject: func(ctx context.Context, x *Exec) error {
			return x.addRulesFor(ctx, x.hold*3/7, faultproxy.Rule{Service: "kms", Function: "DigestFunction", Kind: faultproxy.KindError500})
		},
		During: func(ctx context.Context, x *Exec) {
			sleep(ctx, x.hold*3/7)
			if err := x.addRulesFor(ctx, x.hold*4/7, faultproxy.Rule{Service: "s3", Function: "DigestFunction", Kind: faultproxy.KindError500}); err != nil {
				x.Logf("%s: %v", x.Scenario.Name, err)
			}
		},
	}
}
