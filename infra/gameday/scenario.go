package gameday

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
)

// Scenario is one game-day scenario: a fault under a steady load, the alarms its runbook names,
// and the invariants.
type Scenario struct {
	Name string
	// Proves is what the scenario shows, in a sentence (the report and docs/operations.md).
	Proves string
	// Platform is true for a fault of the platform (the proxy), false for one of the world the
	// stack talks to (the providers, the callers).
	Platform bool
	// Expect are the alarms (logical IDs) its runbook names: each must go to ALARM within the
	// fault and one evaluation window, and back to OK.
	Expect []string
	// Allow are alarms that may also fire, each with the one-line reason its runbook gives (the
	// consequence of the fault it is); any other that fires is a template or metrics bug. An
	// allowed alarm that fires must still be OK by the scenario's end.
	Allow map[string]string
	// Hold is how long the fault stays in force.
	Hold time.Duration
	// Rate is the steady load, in requests per second.
	Rate float64
	// MinFaults names the scenario's fault kinds and the least number of injections of each
	// (the proxy's count of the scenario's rules, or the runner's of the simulators' faults and
	// extra loads): fewer makes the run vacuous, and the scenario fails. Only the baseline has
	// none.
	MinFaults map[string]int64
	// Inject starts the fault; Remove ends it (the proxy's rules are cleared in any case).
	Inject func(ctx context.Context, x *Exec) error
	Remove func(ctx context.Context, x *Exec) error
	// During, when set, runs beside the load while the fault is in force (the pumping burst).
	During func(ctx context.Context, x *Exec)
	// NegativeControl marks the scenario that switches a safeguard off: it passes when the
	// invariants break (a double send), which shows the checks can fail; its violations are
	// not counted in gameday_invariant_violations.
	NegativeControl bool
	// From, when set, is the release (a tag or commit) the scenario's stack must start as: its
	// lane deploys that release first (emulator.sh's RESETNOTIFY_EMULATOR_FROM) and runs the
	// scenario first (PlanLanes).
	From string
	// Check, when set, judges the scenario's own promise after the invariants; each string it
	// returns fails the scenario.
	Check func(ctx context.Context, x *Exec) []string
	// elsewhere maps the alarms another scenario run beside this one judges to that scenario.
	elsewhere map[string]string
	// Charts are the metrics drawn besides the alarms' (name, stat, dimensions).
	Charts []ChartMetric
	// Takes is how long the scenario takes, start to verdict, on a stack of its own (the
	// "takes" column of docs/operations.md's Game days table): PlanLanes shares the catalogue
	// among lanes by it. An estimate, from past runs where there was one.
	Takes time.Duration
}

// ChartMetric is one line of a scenario's chart, as the dashboard draws it.
type ChartMetric struct {
	Label      string
	Namespace  string // empty: the stack's namespace
	Metric     string
	Stat       string
	Dimensions map[string]string
	// alarm is the alarm whose metric this is (its threshold is drawn).
	alarm string
}

// Run is one game day against one deployed stack.
type Run struct {
	S     *Stack
	Proxy *faultproxy.Client
	// Defs are the deployed alarms by logical ID.
	Defs    map[string]AlarmDef
	Watcher AlarmWatcher
	Logf    func(format string, args ...any)
	// Scale multiplies every scenario's hold (CI runs at a smaller scale).
	Scale float64
	// Sabotage is GAMEDAY_SABOTAGE: "faults-off" adds no proxy rule and makes no simulator
	// control call, so that a scenario that needs its faults must fail as vacuous.
	Sabotage string
	// StartWait bounds the wait, before a scenario, for every alarm to leave ALARM (on a fresh
	// stack, those that treat missing data as breaching are in ALARM until their first periods
	// with data); one still in ALARM then fails the scenario, which is not run. The wait ends
	// sooner for an alarm that silence keeps in ALARM (waitNoAlarm).
	StartWait time.Duration
	// silentAfter, when set, replaces silentBound(Defs) (tests).
	silentAfter time.Duration
	// Settle is the alarm period a scenario waits out after its checks (settle): zero when
	// scenarios run side by side, with nothing after them.
	Settle time.Duration

	mu      sync.Mutex
	history []stateSample
	// wmu serializes the calls of Watcher, which need not be safe for concurrent use.
	wmu sync.Mutex
}

// Exec is one scenario being run: the loads whose notifications it checks and the faults it
// injected outside the proxy.
type Exec struct {
	*Run
	Scenario  Scenario
	mu        sync.Mutex
	loads     []*Load
	simFaults map[string]int64
	rules     []faultproxy.Rule
	hold      time.Duration
	// burst is the burst scenario's load.
	burst *Load
	// killed counts, by function, the kills killThen saw in the proxy's tally.
	killed map[string]int64
}

type stateSample struct {
	at     time.Time
	states map[string]string
}

// AddLoad registers l so that its notifications are checked with the scenario's.
func (x *Exec) AddLoad(l *Load) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.loads = append(x.loads, l)
}

// CountFault counts n faults of kind injected outside the proxy (the simulators').
func (x *Exec) CountFault(kind string, n int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.simFaults[kind] += n
}

// AddRules adds rules to those in force in the proxy, each for the scenario's hold (so that
// scenarios run side by side keep each other's), and remembers them to count their faults.
func (x *Exec) AddRules(ctx context.Context, rules ...faultproxy.Rule) error {
	return x.addRulesFor(ctx, x.hold, rules...)
}

// addRulesFor is AddRules with rules in force for d from now, not the whole hold: a scenario
// whose faults follow each other.
func (x *Exec) addRulesFor(ctx context.Context, d time.Duration, rules ...faultproxy.Rule) error {
	if x.Proxy == nil {
		return fmt.Errorf("this scenario needs the fault proxy: run under RESETNOTIFY_FAULT_PROXY=1 infra/emulator/emulator.sh")
	}
	if x.Sabotage == SabotageFaultsOff {
		x.Logf("%s: sabotage %s: %d proxy rules not added", x.Scenario.Name, x.Sabotage, len(rules))
		return nil
	}
	for i := range rules {
		rules[i].For = d
	}
	x.mu.Lock()
	x.rules = append(x.rules, rules...)
	x.mu.Unlock()
	return x.Proxy.Add(ctx, rules...)
}

// ownFaults returns the faults the proxy injected between two of its counts under the
// scenario's own rules.
func (x *Exec) ownFaults(before, after faultproxy.Counts) []faultproxy.FaultCount {
	key := func(f faultproxy.FaultCount) faultproxy.FaultCount { f.Count = 0; return f }
	was := map[faultproxy.FaultCount]int64{}
	for _, f := range before.Faults {
		was[key(f)] += f.Count
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []faultproxy.FaultCount
	for _, f := range after.Faults {
		n := f.Count - was[key(f)]
		if n <= 0 {
			continue
		}
		for _, rule := range x.rules {
			if (rule.Service == "" || rule.Service == f.Service) && rule.Kind == f.Kind &&
				(len(rule.Operations) == 0 || slices.Contains(rule.Operations, f.Operation)) &&
				(rule.Function == "" || strings.Contains(f.Function, rule.Function)) {
				f.Count = n
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// SimAll calls the control API of every simulator of the chain.
func (r *Run) SimAll(ctx context.Context, method, path string, body any) error {
	if r.Sabotage == SabotageFaultsOff {
		return nil
	}
	for _, base := range r.S.Sims {
		if err := r.S.Sim(ctx, base, method, path, body, nil); err != nil {
			return err
		}
	}
	return nil
}

// pollOnce evaluates the alarms at now.
func (r *Run) pollOnce(ctx context.Context) {
	now := time.Now()
	r.wmu.Lock()
	err := r.Watcher.Poll(ctx, now)
	states := r.Watcher.States()
	r.wmu.Unlock()
	if err != nil && ctx.Err() == nil {
		r.Logf("alarms: %v", err)
	}
	r.mu.Lock()
	r.history = append(r.history, stateSample{now, states})
	r.mu.Unlock()
}

// StartPolling evaluates the alarms once, then every 15 s until the returned function is
// called. The first evaluation gives each alarm its state before any scenario: on a fresh
// stack, alarms that treat missing data as breaching are in ALARM until their first periods
// with data.
func (r *Run) StartPolling(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	r.pollOnce(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(15 * time.Second):
			}
			r.pollOnce(ctx)
		}
	}()
	return func() { cancel(); <-done }
}

func (r *Run) statesNow() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.history) == 0 {
		return map[string]string{}
	}
	return r.history[len(r.history)-1].states
}

// transitions returns the alarm transitions in [from, to), by logical ID.
func (r *Run) transitions(from, to time.Time) []AlarmTransition {
	r.wmu.Lock()
	all := slices.Clone(r.Watcher.Transitions())
	r.wmu.Unlock()
	var out []AlarmTransition
	for _, t := range all {
		if !t.At.Before(from) && t.At.Before(to) {
			t.Alarm = LogicalName(r.S.Name, t.Alarm)
			out = append(out, t)
		}
	}
	return out
}

// ExecuteTogether runs scenarios side by side, each with its own load and destinations (a
// short game day, where a minute counts); their proxy rules must not overlap. Allowances stay
// apart: each alarm is judged in one scenario only, the one that expects it, else the one that
// allows it (JudgedIn); the others leave it to that one.
func (r *Run) ExecuteTogether(ctx context.Context, scs []Scenario) []Result {
	out := make([]Result, len(scs))
	owner := JudgedIn(scs)
	var wg sync.WaitGroup
	for i := range scs {
		sc := scs[i]
		sc.elsewhere = map[string]string{}
		for alarm, name := range owner {
			if name != sc.Name {
				sc.elsewhere[alarm] = name
			}
		}
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = r.Execute(ctx, sc) }()
	}
	wg.Wait()
	return out
}

// Execute runs one scenario and checks it.
// It is long because it is the scenario's timeline, step by step: load, fault on, hold, fault
// off, recovery, then the checks.
//
//revive:disable-next-line:function-length
func (r *Run) Execute(ctx context.Context, sc Scenario) Result {
	// Scaled, but never under a minute: the shortest alarm period, and one digest run.
	hold := max(time.Duration(float64(sc.Hold)*r.Scale).Round(time.Second), min(sc.Hold, time.Minute))
	logf := func(format string, args ...any) { r.Logf(sc.Name+": "+format, args...) }
	x := &Exec{Run: r, Scenario: sc, simFaults: map[string]int64{}, hold: hold}
	res := Result{Name: sc.Name, Proves: sc.Proves, Platform: sc.Platform, Expect: sc.Expect, Hold: hold.String()}
	began := time.Now()
	if inAlarm := r.waitNoAlarm(ctx, r.StartWait); len(inAlarm) > 0 {
		// Not run: a verdict over an alarm already in ALARM proves nothing of this scenario.
		res.Start, res.End = time.Now().UTC(), time.Now().UTC()
		failAtStart(&res, inAlarm, time.Since(began))
		logf("%s", res.Errors[0])
		return res
	}
	res.Start = time.Now().UTC()
	r.Logf("scenario %s: load %.1f/s, fault for %s, expecting %v", sc.Name, sc.Rate, hold, sc.Expect)

	load := NewLoad(r.S, sc.Name, sc.Rate)
	x.AddLoad(load)
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); load.Run(loadCtx) }()
	go func() { defer wg.Done(); load.ConvertLoop(loadCtx) }()

	// Before the fault: the load alone, so the chart shows the normal level.
	sleep(ctx, 45*time.Second)
	var before faultproxy.Counts
	if r.Proxy != nil && sc.Platform {
		var err error
		if before, err = r.Proxy.Counts(ctx); err != nil {
			res.Errors = append(res.Errors, "proxy counts: "+err.Error())
		}
	}
	res.FaultStart = time.Now().UTC()
	logf("fault on")
	if sc.Inject != nil {
		if err := sc.Inject(ctx, x); err != nil {
			res.Errors = append(res.Errors, "inject: "+err.Error())
		}
	}
	// During gets the hold as its deadline; the fault lasts until it returns, if that is later.
	duringCtx, stopDuring := context.WithTimeout(ctx, hold)
	during := make(chan struct{})
	go func() {
		defer close(during)
		if sc.During != nil {
			sc.During(duringCtx, x)
		}
	}()
	sleep(duringCtx, hold)
	<-during
	stopDuring()
	if sc.Remove != nil {
		if err := sc.Remove(ctx, x); err != nil {
			res.Errors = append(res.Errors, "remove: "+err.Error())
		}
	}
	// The scenario's rules lapse by themselves at the end of the hold (For); the caller clears
	// the proxy after the scenario, or after the scenarios run side by side.
	if r.Proxy != nil && sc.Platform {
		if c, err := r.Proxy.Counts(ctx); err == nil {
			res.Faults = map[string]int64{}
			res.FaultDetail = x.ownFaults(before, c)
			for _, f := range res.FaultDetail {
				res.Faults[string(f.Kind)] += f.Count
			}
		} else {
			res.Errors = append(res.Errors, "proxy counts: "+err.Error())
		}
	}
	res.FaultEnd = time.Now().UTC()
	logf("fault off")
	// The load goes on a minute, so the chart shows the recovery under load.
	sleep(ctx, time.Minute)
	stopLoad()
	wg.Wait()
	x.mu.Lock()
	if res.Faults == nil {
		res.Faults = map[string]int64{}
	}
	for k, n := range x.simFaults {
		res.Faults[k] += n
	}
	loads := slices.Clone(x.loads)
	x.mu.Unlock()

	if v := Vacuous(sc.MinFaults, res.Faults); len(v) > 0 {
		res.Vacuous = true
		res.Errors = append(res.Errors, v...)
	}
	r.waitForAlarms(ctx, sc, &res, res.FaultEnd, logf)
	var sent []*Sent
	for _, l := range loads {
		sent = append(sent, l.Sent()...)
	}
	res.Requests = len(sent)
	for _, e := range sent {
		if e.HTTP == http.StatusAccepted {
			res.Admitted++
		}
	}
	logf("invariants over %d requests", len(sent))
	res.Invariants = CheckInvariants(ctx, r.S, sent, res.Start, logf)
	if sc.Check != nil {
		res.Errors = append(res.Errors, sc.Check(ctx, x)...)
	}
	r.settle(ctx, sc, &res, logf)
	res.End = time.Now().UTC()
	r.judgeAlarms(sc, &res)
	r.judgeSilence(ctx, &res)
	res.Passed = len(res.Errors) == 0 && res.Invariants.Count() == 0 && res.AlarmsAsExpected()
	if sc.NegativeControl {
		res.NegativeControl = true
		res.Passed = len(res.Errors) == 0 && res.Invariants.DoubleSends > 0
	}
	logf("passed %v (%d invariant violations, alarms %d/%d as expected)", res.Passed,
		res.Invariants.Count(), res.alarmsGood(), res.alarmsJudged())
	return res
}

// settle waits, after the checks, for the alarm period (Settle) that holds the scenario's last
// consequences to close and be evaluated, then for any alarm it raised to clear: a record that
// expires once its deadline passes, or a batch back after its visibility timeout, counts in a
// 5-minute period that ends after the checks, and its alarm must be judged in this scenario,
// not in the next one.
func (r *Run) settle(ctx context.Context, sc Scenario, res *Result, logf func(string, ...any)) {
	if r.Settle <= 0 {
		return
	}
	closed := settledAt(time.Now().UTC(), r.Settle)
	logf("settling: alarms evaluated at %s", closed.Format(time.TimeOnly))
	sleep(ctx, time.Until(closed))
	r.waitForAlarms(ctx, sc, res, time.Now(), logf)
}

// settledAt is when the alarm period of length period that holds now has closed and been
// evaluated: its end, plus 90 s for the last datapoint to be put and the evaluator to run.
func settledAt(now time.Time, period time.Duration) time.Time {
	return now.Truncate(period).Add(period + 90*time.Second)
}

// waitForAlarms waits until every expected alarm went to ALARM and back to OK and no alarm is in
// ALARM, or until clearBy(from) of the alarms involved. A vacuous scenario has failed, and the
// faults it did not inject raise nothing: it waits only for no alarm to be in ALARM, not up to
// the slowest expected alarm's window for alarms that cannot come.
func (r *Run) waitForAlarms(ctx context.Context, sc Scenario, res *Result, from time.Time, logf func(string, ...any)) {
	var defs []AlarmDef
	for _, name := range append(slices.Clone(sc.Expect), sc.Allowed()...) {
		if d, ok := r.Defs[name]; ok {
			defs = append(defs, d)
		}
	}
	limit := clearBy(from, defs)
	for time.Now().Before(limit) && ctx.Err() == nil {
		trs := r.transitions(res.FaultStart, time.Now().Add(time.Minute))
		done := true
		for _, name := range sc.Expect {
			if res.Vacuous {
				break
			}
			fired, cleared := false, false
			for _, t := range trs {
				if t.Alarm == name && t.To == "ALARM" {
					fired = true
				}
				if t.Alarm == name && t.To == "OK" && fired {
					cleared = true
				}
			}
			done = done && fired && cleared
		}
		for name, st := range r.statesNow() {
			l := LogicalName(r.S.Name, name)
			if st == "ALARM" && sc.Allow[l] == "" && sc.elsewhere[l] == "" {
				done = false
			}
		}
		if done {
			return
		}
		sleep(ctx, 15*time.Second)
	}
	logf("alarms: still waiting at %s, moving on", time.Now().UTC().Format(time.TimeOnly))
}

// clearBy is when every alarm of defs that a breach up to from raised is back to OK, plus 3
// minutes of evaluation delay: the breach counts in the period holding from, which ends up to a
// period after it, and an alarm keeps evaluating its last real datapoints while they are within
// its evaluation range (EvaluationPeriods + 2 periods, as infra/alarmeval and CloudWatch do). Without
// the alarms' definitions, one 5-minute period is assumed. (A 15-minute alarm breached 4 minutes into
// its period clears 11 + 45 minutes later, past a bound counted from the breach.)
func clearBy(from time.Time, defs []AlarmDef) time.Time {
	by := from
	for _, d := range append([]AlarmDef{{Period: 5 * time.Minute, Evals: 1}}, defs...) {
		if d.Period <= 0 {
			continue
		}
		end := from.Truncate(d.Period).Add(d.Period)
		if t := end.Add(d.Window() + 2*d.Period); t.After(by) {
			by = t
		}
	}
	return by.Add(3 * time.Minute)
}

// judgeAlarms fills res.Alarms from the transitions seen between the scenario's start and end.
// It is long because every verdict (fired in its window, cleared, unexpected, allowed) is one
// case over the same transitions.
//
//revive:disable-next-line:function-length
func (r *Run) judgeAlarms(sc Scenario, res *Result) {
	// No alarm was in ALARM when the scenario began (waitNoAlarm): what it did after is judged.
	trs := r.transitions(res.Start.Add(time.Nanosecond), res.End.Add(time.Second))
	seen := map[string]*AlarmResult{}
	var names []string
	for _, t := range trs {
		if sc.elsewhere[t.Alarm] != "" {
			continue // judged in the scenario beside this one that names it
		}
		a := seen[t.Alarm]
		if a == nil {
			a = &AlarmResult{Name: t.Alarm, Expected: slices.Contains(sc.Expect, t.Alarm), Allowed: sc.Allow[t.Alarm] != ""}
			seen[t.Alarm] = a
			names = append(names, t.Alarm)
		}
		switch {
		case t.To == "ALARM" && a.AlarmAt == nil:
			at := t.At
			a.AlarmAt = &at
		case t.To == "OK" && a.AlarmAt != nil && a.OKAt == nil:
			at := t.At
			a.OKAt = &at
		}
	}
	for _, name := range sc.Expect {
		if seen[name] == nil {
			seen[name] = &AlarmResult{Name: name, Expected: true}
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		a := seen[name]
		if a.AlarmAt == nil && !a.Expected {
			continue // a change between OK and INSUFFICIENT_DATA, or an ALARM from before clearing
		}
		def, known := r.Defs[name]
		if a.AlarmAt != nil {
			s := a.AlarmAt.Sub(res.FaultStart).Seconds()
			a.ToAlarmSeconds = &s
		}
		if a.OKAt != nil {
			s := a.OKAt.Sub(res.FaultEnd).Seconds()
			a.ToOKSeconds = &s
		}
		switch {
		case !known && a.Expected:
			a.Note = "not deployed"
		case a.Expected && a.AlarmAt == nil:
			a.Note = "never went to ALARM"
		case a.Expected && a.AlarmAt.Before(res.FaultStart):
			a.Note = "in ALARM before the fault"
		case a.Expected && a.AlarmAt.After(res.FaultEnd.Add(def.Window()+2*time.Minute)):
			a.Note = fmt.Sprintf("went to ALARM %s after the fault ended, later than its window %s", a.AlarmAt.Sub(res.FaultEnd).Round(time.Second), def.Window())
		case a.Expected && a.OKAt == nil:
			a.Note = "never back to OK"
		case a.Expected:
			a.AsExpected = true
		case a.Allowed && a.OKAt == nil:
			a.Note = "allowed, but never back to OK by the scenario's end"
		case a.Allowed:
			a.AsExpected = true
			a.Note = "allowed: a consequence the runbook names"
		default:
			a.Note = "fired, and its runbook does not name this scenario"
		}
		res.Alarms = append(res.Alarms, *a)
	}
}

// Sabotages GAMEDAY_SABOTAGE names: each must make a run fail, naming why.
const (
	SabotageFaultsOff = "faults-off"
	SabotageBridgeOff = "bridge-off"
)

// Vacuous returns, for each fault kind of min injected fewer times than it asks, why the
// scenario proved nothing; nil when every kind reached its least number.
func Vacuous(min, injected map[string]int64) []string {
	var out []string
	kinds := make([]string, 0, len(min))
	for k := range min {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if injected[k] < min[k] {
			out = append(out, fmt.Sprintf("vacuous: %d %s injected, want at least %d", injected[k], k, min[k]))
		}
	}
	return out
}

// Reloader is an AlarmWatcher that can load the deployed alarms again (EvalWatcher).
type Reloader interface {
	Reload(ctx context.Context) error
}

// LoadDefs reads the deployed alarms into Defs, by logical ID.
func (r *Run) LoadDefs(ctx context.Context) error {
	defs, err := AlarmDefs(ctx, r.S)
	if err != nil {
		return fmt.Errorf("read the deployed alarms: %w", err)
	}
	byID := map[string]AlarmDef{}
	for name, d := range defs {
		byID[LogicalName(r.S.Name, name)] = d
	}
	r.Defs = byID
	return nil
}

// ReloadAlarms reads the deployed alarms again after a deploy changed them, for the watcher
// and Defs: the scenario is judged by the alarms of the release it ends on. Only a scenario
// that runs alone may call it (Defs is read unlocked).
func (r *Run) ReloadAlarms(ctx context.Context) error {
	if rl, ok := r.Watcher.(Reloader); ok {
		r.wmu.Lock()
		err := rl.Reload(ctx)
		r.wmu.Unlock()
		if err != nil {
			return err
		}
	}
	return r.LoadDefs(ctx)
}

// SilenceChecker is an AlarmWatcher that can tell which alarms had no datapoint in a window
// (EvalWatcher).
type SilenceChecker interface {
	Silent(ctx context.Context, start, end time.Time) ([]string, error)
}

// judgeSilence fails the scenario for each alarm that did not fire in it while its metric had no
// datapoint there and its missing data is not breaching: its quiet proves nothing (a stopped
// EMF bridge, a metric renamed, a function never invoked). Every alarm's metric has a
// datapoint where its event is decided, a zero when it did not happen, so none is exempt.
func (r *Run) judgeSilence(ctx context.Context, res *Result) {
	checker, ok := r.Watcher.(SilenceChecker)
	if !ok {
		return
	}
	names, err := checker.Silent(ctx, res.Start, res.End)
	if err != nil {
		res.Errors = append(res.Errors, "silence: "+err.Error())
		return
	}
	fired := map[string]bool{}
	for _, a := range res.Alarms {
		fired[a.Name] = fired[a.Name] || a.AlarmAt != nil
	}
	for _, n := range names {
		l := LogicalName(r.S.Name, n)
		if !fired[l] {
			res.Silent = append(res.Silent, l)
		}
	}
	sort.Strings(res.Silent)
	if len(res.Silent) > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("silent: %d alarms had no datapoint of their metric during the scenario, and silence is not health: %s",
			len(res.Silent), strings.Join(res.Silent, ", ")))
	}
}

// inAlarm is an alarm in ALARM when a scenario was to start, and what its metric showed during
// the wait.
type inAlarm struct {
	Name string // logical ID
	// Silent: its metric had no datapoint since the wait began; Why says so, or how many
	// periods had one.
	Silent bool
	Why    string
}

// failAtStart fails a scenario that did not start because alarms were still in ALARM, naming
// each and whether its metric was silent.
func failAtStart(res *Result, in []inAlarm, waited time.Duration) {
	res.NotRun = true
	var named []string
	for _, a := range in {
		res.AlarmAtStart = append(res.AlarmAtStart, a.Name)
		if a.Silent {
			res.Silent = append(res.Silent, a.Name)
		}
		named = append(named, a.Name+" ("+a.Why+")")
	}
	res.Errors = append(res.Errors, fmt.Sprintf("not run: %d alarms still in ALARM after waiting %s for every alarm to be OK: %s",
		len(in), waited.Round(time.Second), strings.Join(named, ", ")))
	if len(res.Silent) > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("silent: %d alarms in ALARM had no datapoint of their metric, and silence is not health: %s",
			len(res.Silent), strings.Join(res.Silent, ", ")))
	}
}

// MetricCounter is an AlarmWatcher that can count the datapoints of one alarm's metric
// (EvalWatcher).
type MetricCounter interface {
	// Datapoints returns how many periods of [start, end) hold a datapoint of the metric of the
	// alarm named (deployed name), and its TreatMissingData; known is false for a composite
	// alarm, which has no metric, or one not watched.
	Datapoints(ctx context.Context, name string, start, end time.Time) (n int, missing string, known bool, err error)
}

// bridgeLag bounds how long an EMF line takes to become a datapoint: the bridge polls the log
// groups every second with a 10-s lookback and flushes every second (infra/emfbridge's
// defaults); the rest is room for a busy machine.
const bridgeLag = 30 * time.Second

// silentBound is how long the wait before a scenario lets an alarm in ALARM go without a
// datapoint of its metric before giving up on it: twice the shortest period of the deployed
// alarms, plus the bridge's lag. The alarms that stay in ALARM on silence (missing data breaching:
// the digest's DigestLag and ArchiveLag, the sweeper's OverdueRecords) read gauges their
// functions write on every run of a one-minute schedule, the shortest alarm period; so a stack
// whose metrics flow has put one within two runs (one may straddle the wait's start, or be a
// cold start) and the bridge's lag. One still silent then will not leave ALARM in the rest of
// the wait: the wait ends, rather than burning StartWait for an answer already known (a
// stopped EMF bridge). An alarm in ALARM on data of its own is waited for up to StartWait.
func silentBound(defs map[string]AlarmDef) time.Duration {
	shortest := time.Duration(0)
	for _, d := range defs {
		if d.Period > 0 && (shortest == 0 || d.Period < shortest) {
			shortest = d.Period
		}
	}
	if shortest == 0 {
		shortest = time.Minute
	}
	return 2*shortest + bridgeLag
}

// waitNoAlarm waits, up to limit, until no alarm is in ALARM (by the watcher's last poll), and
// returns those still in it, by logical ID, each with whether its metric had any datapoint since
// the wait began. It returns before limit, once silentBound has passed, when an alarm in ALARM
// whose missing data keeps it there (breaching, ignore) has had no datapoint since the wait
// began: silence will not clear it.
func (r *Run) waitNoAlarm(ctx context.Context, limit time.Duration) []inAlarm {
	began := time.Now()
	deadline := began.Add(limit)
	bound := r.silentAfter
	if bound == 0 {
		bound = silentBound(r.Defs)
	}
	for {
		var names []string
		for name, st := range r.statesNow() {
			if st == "ALARM" {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		over := !time.Now().Before(deadline) || ctx.Err() != nil
		if len(names) == 0 {
			return nil
		}
		if time.Since(began) < time.Second && r.Logf != nil {
			r.Logf("alarms: %d in ALARM, waiting up to %s for them to be OK (%s if silence holds one)", len(names), limit, bound)
		}
		if over || time.Since(began) >= bound {
			in, hopeless := r.describeInAlarm(ctx, names, began)
			if over || hopeless {
				return in
			}
		}
		next := min(15*time.Second, max(time.Until(deadline), 0))
		if d := bound - time.Since(began); d > 0 && d < next {
			next = d
		}
		sleep(ctx, next)
	}
}

// describeInAlarm says, for each alarm of names (deployed names) in ALARM, whether its metric had
// a datapoint since since; hopeless is true when one had none and its missing data keeps it in
// ALARM.
func (r *Run) describeInAlarm(ctx context.Context, names []string, since time.Time) (in []inAlarm, hopeless bool) {
	counter, _ := r.Watcher.(MetricCounter)
	for _, name := range names {
		a := inAlarm{Name: LogicalName(r.S.Name, name), Why: "in ALARM"}
		d := r.Defs[a.Name]
		metric := d.Namespace + "/" + d.Metric
		if counter != nil {
			n, missing, known, err := counter.Datapoints(ctx, name, since, time.Now())
			switch {
			case err != nil:
				a.Why = "its metric unread: " + err.Error()
			case !known:
				a.Why = "composite: see its children"
			case n == 0:
				a.Silent = true
				a.Why = fmt.Sprintf("silent: no datapoint of %s since %s", metric, since.UTC().Format(time.TimeOnly))
				hopeless = hopeless || missing == "breaching" || missing == "ignore"
			default:
				a.Why = fmt.Sprintf("%d periods with a datapoint of %s since %s", n, metric, since.UTC().Format(time.TimeOnly))
			}
		}
		in = append(in, a)
	}
	return in, hopeless
}

// Allowed returns the names of the scenario's allowed alarms, sorted.
func (sc Scenario) Allowed() []string {
	return slices.Sorted(maps.Keys(sc.Allow))
}

// JudgedIn returns, for scenarios run side by side, the scenario that judges each alarm they
// name: the first that expects it, else the first that allows it.
func JudgedIn(scs []Scenario) map[string]string {
	owner := map[string]string{}
	for _, sc := range scs {
		for _, a := range sc.Expect {
			if owner[a] == "" {
				owner[a] = sc.Name
			}
		}
	}
	for _, sc := range scs {
		for _, a := range sc.Allowed() {
			if owner[a] == "" {
				owner[a] = sc.Name
			}
		}
	}
	return owner
}
