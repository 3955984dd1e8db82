package gameday

import (
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/alarmeval"
	"github.com/resetnotify/resetnotify/infra/faultproxy"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// fakeWatcher replays a fixed list of transitions.
type fakeWatcher struct{ trs []AlarmTransition }

func (f *fakeWatcher) Poll(context.Context, time.Time) error { return nil }
func (f *fakeWatcher) Transitions() []AlarmTransition        { return f.trs }
func (f *fakeWatcher) States() map[string]string             { return map[string]string{} }

func TestJudgeAlarms(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	res := Result{Start: t0, FaultStart: t0.Add(time.Minute), FaultEnd: t0.Add(3 * time.Minute), End: t0.Add(12 * time.Minute)}
	name := func(logical string) string { return "st-" + logical + "-ABC123" }
	defs := map[string]AlarmDef{
		"ProviderCoolDownAlarm": {Name: name("ProviderCoolDownAlarm"), Period: 5 * time.Minute, Evals: 1},
		"DigestErrorsAlarm":     {Name: name("DigestErrorsAlarm"), Period: time.Minute, Evals: 2},
		"PrefixVelocityAlarm":   {Name: name("PrefixVelocityAlarm"), Period: time.Minute, Evals: 1},
	}
	tr := func(alarm, to string, at time.Duration) AlarmTransition {
		return AlarmTransition{Alarm: name(alarm), To: to, At: t0.Add(at)}
	}
	cases := []struct {
		name   string
		sc     Scenario
		trs    []AlarmTransition
		good   int
		judged int
		notes  []string
	}{
		{"fired and cleared", Scenario{Expect: []string{"ProviderCoolDownAlarm"}},
			[]AlarmTransition{tr("ProviderCoolDownAlarm", "ALARM", 2*time.Minute), tr("ProviderCoolDownAlarm", "OK", 8*time.Minute)}, 1, 1, nil},
		{"never fired", Scenario{Expect: []string{"ProviderCoolDownAlarm"}}, nil, 0, 1, []string{"never went to ALARM"}},
		{"never cleared", Scenario{Expect: []string{"ProviderCoolDownAlarm"}},
			[]AlarmTransition{tr("ProviderCoolDownAlarm", "ALARM", 2*time.Minute)}, 0, 1, []string{"never back to OK"}},
		{"fired too late", Scenario{Expect: []string{"DigestErrorsAlarm"}},
			[]AlarmTransition{tr("DigestErrorsAlarm", "ALARM", 9*time.Minute), tr("DigestErrorsAlarm", "OK", 10*time.Minute)}, 0, 1, []string{"later than its window"}},
		{"another alarm fired", Scenario{},
			[]AlarmTransition{tr("PrefixVelocityAlarm", "ALARM", 2*time.Minute), tr("PrefixVelocityAlarm", "OK", 4*time.Minute)}, 0, 1, []string{"does not name"}},
		{"an allowed one fired and cleared", Scenario{Allow: map[string]string{"PrefixVelocityAlarm": "r"}},
			[]AlarmTransition{tr("PrefixVelocityAlarm", "ALARM", 2*time.Minute), tr("PrefixVelocityAlarm", "OK", 5*time.Minute)}, 1, 1, nil},
		{"an allowed one fired and never cleared", Scenario{Allow: map[string]string{"PrefixVelocityAlarm": "r"}},
			[]AlarmTransition{tr("PrefixVelocityAlarm", "ALARM", 2*time.Minute)}, 0, 1, []string{"never back to OK"}},
		{"in ALARM from the deployment, then OK", Scenario{},
			[]AlarmTransition{tr("DigestErrorsAlarm", "ALARM", 0), tr("DigestErrorsAlarm", "OK", 2*time.Minute)}, 1, 1, nil},
		{"in ALARM from the deployment, OK, then ALARM again", Scenario{},
			[]AlarmTransition{tr("DigestErrorsAlarm", "ALARM", 0), tr("DigestErrorsAlarm", "OK", 2*time.Minute), tr("DigestErrorsAlarm", "ALARM", 4*time.Minute)}, 0, 1, []string{"does not name"}},
		{"quiet baseline", Scenario{}, []AlarmTransition{tr("DigestErrorsAlarm", "OK", 30*time.Second)}, 1, 1, nil},
		{"fired, judged in the scenario beside it that allows it", Scenario{elsewhere: map[string]string{"PrefixVelocityAlarm": "other"}},
			[]AlarmTransition{tr("PrefixVelocityAlarm", "ALARM", 2*time.Minute)}, 1, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Run{S: &Stack{Name: "st"}, Defs: defs, Watcher: &fakeWatcher{c.trs}}
			res := res
			r.judgeAlarms(c.sc, &res)
			if res.alarmsGood() != c.good || res.alarmsJudged() != c.judged {
				t.Errorf("%d of %d as expected, want %d of %d: %+v", res.alarmsGood(), res.alarmsJudged(), c.good, c.judged, res.Alarms)
			}
			for _, n := range c.notes {
				found := false
				for _, a := range res.Alarms {
					found = found || strings.Contains(a.Note, n)
				}
				if !found {
					t.Errorf("no alarm note says %q: %+v", n, res.Alarms)
				}
			}
		})
	}
}

func TestReportFigures(t *testing.T) {
	rep := &Report{Results: []Result{
		{Name: "a", Passed: true, Faults: map[string]int64{"throttle": 40}, Alarms: []AlarmResult{{Name: "X", Expected: true, AsExpected: true}}},
		{Name: "b", Faults: map[string]int64{"kill": 3, "throttle": 1}, Alarms: []AlarmResult{{Name: "Y", AsExpected: false}, {Name: "Z", Expected: true, AsExpected: true}},
			Invariants: Invariants{Violations: []string{"one", "two"}}},
		{Name: "c", Passed: true},
	}}
	rep.Summarize()
	if rep.Scenarios != 3 || rep.InvariantViolations != 2 || rep.FaultsInjected != 44 || rep.Passed != 2 {
		t.Errorf("figures %+v", rep)
	}
	// a: 1/1, b: 1/2, c (quiet, none expected): 1/1.
	if want := 3.0 / 4; rep.AlarmsAsExpected != want {
		t.Errorf("alarms as expected %v, want %v", rep.AlarmsAsExpected, want)
	}
	md := rep.Markdown()
	for _, want := range []string{"`gameday_invariant_violations` | 2", "kill 3, throttle 1", "**not as expected**", "- violation: two"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown report does not say %q:\n%s", want, md)
		}
	}
}

func TestLogicalName(t *testing.T) {
	for in, want := range map[string]string{
		"resetnotify-e2e-ProviderCoolDownAlarm-1A2B3C": "ProviderCoolDownAlarm",
		"resetnotify-e2e-DigestErrorsAlarm":            "DigestErrorsAlarm",
		"OtherAlarm":                                   "OtherAlarm",
	} {
		if got := LogicalName("resetnotify-e2e", in); got != want {
			t.Errorf("LogicalName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecretPatterns(t *testing.T) {
	c := code()
	if !codeRe.MatchString(c) || len(codeRe.FindString(c)) != len(c) {
		t.Errorf("code %q is not what the log scan looks for", c)
	}
	n := NormalNumber()
	if got := numberRe.FindString(n); got != strings.TrimPrefix(n, "+") {
		t.Errorf("number %q: the log scan finds %q", n, got)
	}
	if strings.HasPrefix(n, PumpPrefix) || strings.HasPrefix(n, "+121256") {
		t.Errorf("normal number %q in a pumping prefix", n)
	}
}

func TestChart(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	at := func(m int) *time.Time { v := t0.Add(time.Duration(m) * time.Minute); return &v }
	res := &Result{Start: t0, FaultStart: t0.Add(time.Minute), FaultEnd: t0.Add(3 * time.Minute), End: t0.Add(8 * time.Minute),
		Alarms:       []AlarmResult{{Name: "PrefixVelocityAlarm", Expected: true, AlarmAt: at(2), OKAt: at(5)}, {Name: "Other", AlarmAt: at(4)}},
		AlarmAtStart: []string{"DigestLagAlarm"}}
	r := &Run{Defs: map[string]AlarmDef{"PrefixVelocityAlarm": {Threshold: 0}}}
	ms := []ChartMetric{{Label: "admitted"}, {Label: "Refusals", alarm: "PrefixVelocityAlarm"}}
	var ss []series
	for i := range ms {
		s := series{label: ms[i].Label}
		for m := 0; m < 8; m++ {
			s.at = append(s.at, t0.Add(time.Duration(m)*time.Minute))
			s.val = append(s.val, float64((m*(i+3))%7))
		}
		ss = append(ss, s)
	}
	dir := t.TempDir()
	if err := r.drawChart(Scenario{Name: "pump"}, ms, ss, res, dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, res.Chart))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 500 {
		t.Errorf("chart is %v, want a readable size", b)
	}
	if out := os.Getenv("GAMEDAY_CHART_OUT"); out != "" {
		_ = os.WriteFile(out, mustRead(t, filepath.Join(dir, res.Chart)), 0o644)
	}
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNotificationOfRef: sends are matched to notifications by the attempt's client_ref, so two
// notifications to one number are never taken for a double send.
func TestNotificationOfRef(t *testing.T) {
	for ref, want := range map[string]string{
		"01M911SXB0EJ9CM56CRSG1GGHC-a1":  "01M911SXB0EJ9CM56CRSG1GGHC",
		"01M911SXB0EJ9CM56CRSG1GGHC-a12": "01M911SXB0EJ9CM56CRSG1GGHC",
	} {
		if got := NotificationOfRef(ref); got != want {
			t.Errorf("NotificationOfRef(%q) = %q, want %q", ref, got, want)
		}
	}
	if a, b := NormalNumber(), NormalNumber(); a == b {
		t.Error("two calls of NormalNumber gave one number")
	}
}

// TestSettledAtIsAfterThePeriodHoldingNow holds settle to the period in which the scenario's
// checks ended: judged once that period has closed and been evaluated, never in the one before
// (whose alarms would miss what the scenario caused late) and never a whole period later than
// needed.
func TestSettledAtIsAfterThePeriodHoldingNow(t *testing.T) {
	for _, c := range []struct{ now, want string }{
		{"10:02:10", "10:06:30"},
		{"10:04:59", "10:06:30"},
		{"10:05:00", "10:11:30"},
		{"10:00:00", "10:06:30"},
	} {
		now, err := time.Parse(time.DateTime, "2026-12-05 "+c.now)
		if err != nil {
			t.Fatal(err)
		}
		got := settledAt(now, 5*time.Minute).Format(time.TimeOnly)
		if got != c.want {
			t.Errorf("settledAt(%s, 5m) = %s, want %s", c.now, got, c.want)
		}
	}
}

// TestClearByCountsFromTheEndOfTheBreachsPeriod holds the wait for alarms to clear to the end of
// the period that holds the breach: an alarm of a 15-minute period and 1 evaluation period
// breached at 11:03 went back to OK at about 12:00, after a wait counted from the fault's end
// (11:04:15 + 48 min) had given up.
func TestClearByCountsFromTheEndOfTheBreachsPeriod(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.DateTime, "2026-12-05 "+s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	conv := AlarmDef{Name: "ConversionDropAlarm", Period: 15 * time.Minute, Evals: 1}
	five := AlarmDef{Name: "DispatchErrorsAlarm", Period: 5 * time.Minute, Evals: 1}
	for _, c := range []struct {
		from string
		defs []AlarmDef
		want string
	}{
		{"11:04:15", []AlarmDef{conv}, "12:03:00"},
		{"11:04:15", []AlarmDef{five, conv}, "12:03:00"},
		{"11:04:15", []AlarmDef{five}, "11:23:00"},
		{"11:04:15", nil, "11:23:00"},
	} {
		if got := clearBy(at(c.from), c.defs).Format(time.TimeOnly); got != c.want {
			t.Errorf("clearBy(%s, %d alarms) = %s, want %s", c.from, len(c.defs), got, c.want)
		}
	}
}

// TestBurstViolations breaks the burst's promise one way at a time and sees each reported.
func TestBurstViolations(t *testing.T) {
	start := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	build := func(n int, every time.Duration) ([]*Sent, map[string]Status, SimState) {
		var sent []*Sent
		finals := map[string]Status{}
		sims := SimState{AcceptedByNotification: map[string]int{}}
		for i := range n {
			e := &Sent{Key: fmt.Sprintf("k%d", i), SubmittedAt: start.Add(time.Duration(i) * every), HTTP: http.StatusAccepted}
			e.ExpiresAt = e.SubmittedAt.Add(10 * time.Minute)
			sent = append(sent, e)
			id := fmt.Sprintf("n%d", i)
			finals[e.Key] = Status{NotificationID: id, State: "sent"}
			sims.AcceptedByNotification[id] = 1
			sims.Requests = append(sims.Requests, simapi.RequestEntry{ClientRef: id + "-a1", At: e.SubmittedAt.Add(time.Second)})
		}
		return sent, finals, sims
	}
	every := 13 * time.Millisecond
	if v := BurstViolations(build(BurstMin, every)); len(v) != 0 {
		t.Fatalf("a good burst: %v", v)
	}
	want := BurstFigure{Submitted: BurstMin, Answered: BurstMin, Delivered: BurstMin, Once: BurstMin, SubmitSeconds: 25.987}
	if f := BurstFigures(build(BurstMin, every)); f != want {
		t.Errorf("a good burst's figures: %+v, want %+v", f, want)
	}
	sent, finals, sims := build(BurstMin, every)
	sent[1].HTTP, finals["k2"], sims.AcceptedByNotification["n3"], sims.Requests[4].At = 0, Status{NotificationID: "n2", State: "expired"}, 2, sent[4].ExpiresAt
	want = BurstFigure{Submitted: BurstMin, Answered: BurstMin - 1, Delivered: BurstMin - 1, Once: BurstMin - 1, Late: 1, SubmitSeconds: 25.987}
	if f := BurstFigures(sent, finals, sims); f != want {
		t.Errorf("a broken burst's figures: %+v, want %+v", f, want)
	}
	cases := map[string]func(sent []*Sent, finals map[string]Status, sims *SimState){
		"expired": func(sent []*Sent, finals map[string]Status, _ *SimState) {
			finals["k7"] = Status{NotificationID: "n7", State: "expired"}
		},
		"refused":    func(sent []*Sent, _ map[string]Status, _ *SimState) { sent[3].HTTP = http.StatusServiceUnavailable },
		"twice":      func(_ []*Sent, _ map[string]Status, sims *SimState) { sims.AcceptedByNotification["n9"] = 2 },
		"never":      func(_ []*Sent, _ map[string]Status, sims *SimState) { delete(sims.AcceptedByNotification, "n9") },
		"late":       func(sent []*Sent, _ map[string]Status, sims *SimState) { sims.Requests[5].At = sent[5].ExpiresAt },
		"unreadable": func(_ []*Sent, finals map[string]Status, _ *SimState) { delete(finals, "k11") },
	}
	for name, breakIt := range cases {
		sent, finals, sims := build(BurstMin, every)
		breakIt(sent, finals, &sims)
		if v := BurstViolations(sent, finals, sims); len(v) != 1 {
			t.Errorf("%s: %v, want one violation", name, v)
		}
	}
	if v := BurstViolations(build(BurstMin-1, every)); len(v) != 1 {
		t.Errorf("too few: %v", v)
	}
	if v := BurstViolations(build(BurstMin, 16*time.Millisecond)); len(v) != 1 {
		t.Errorf("too slow (32 s): %v", v)
	}
}

// silentWatcher is a fakeWatcher that reports some alarms silent.
type silentWatcher struct {
	fakeWatcher
	silent []string
}

func (s *silentWatcher) Silent(context.Context, time.Time, time.Time) ([]string, error) {
	return s.silent, nil
}

// TestJudgeSilence: an alarm that did not fire while its metric was silent fails the scenario
// (a stopped EMF bridge); one that fired is judged by its transitions instead.
func TestJudgeSilence(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	at := t0.Add(2 * time.Minute)
	w := &silentWatcher{silent: []string{"st-DigestErrorsAlarm-ABC", "st-PrefixVelocityAlarm-DEF"}}
	r := &Run{S: &Stack{Name: "st"}, Watcher: w}
	res := Result{Start: t0, End: t0.Add(10 * time.Minute), Alarms: []AlarmResult{{Name: "PrefixVelocityAlarm", AlarmAt: &at}}}
	r.judgeSilence(context.Background(), &res)
	if len(res.Silent) != 1 || res.Silent[0] != "DigestErrorsAlarm" || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "DigestErrorsAlarm") {
		t.Errorf("silent %v, errors %v: want DigestErrorsAlarm alone, named", res.Silent, res.Errors)
	}
	w.silent = nil
	res = Result{Start: t0, End: t0.Add(10 * time.Minute)}
	r.judgeSilence(context.Background(), &res)
	if len(res.Errors) != 0 {
		t.Errorf("no silent alarm: errors %v", res.Errors)
	}
	// An alarm whose event did not happen is judged as any other: its function writes a zero.
	w.silent = []string{"st-AuditFailureAlarm-GHI"}
	res = Result{Start: t0, End: t0.Add(10 * time.Minute)}
	r.judgeSilence(context.Background(), &res)
	if len(res.Silent) != 1 || res.Silent[0] != "AuditFailureAlarm" || len(res.Errors) != 1 {
		t.Errorf("AuditFailureAlarm silent: silent %v, errors %v; want it failed", res.Silent, res.Errors)
	}
}

// TestSilentLeavesCompositesToTheirChildren: a composite alarm has no metric, so the silence
// check asks nothing of it: its children are judged.
func TestSilentLeavesCompositesToTheirChildren(t *testing.T) {
	w := &EvalWatcher{alarms: []alarmeval.Alarm{{Name: "st-AdmissionPage-ABC", Rule: "ALARM(x) OR ALARM(y)"}}}
	got, err := w.Silent(context.Background(), time.Unix(0, 0), time.Unix(600, 0))
	if err != nil || len(got) != 0 {
		t.Errorf("Silent = %v, %v; want none, no error", got, err)
	}
}

// TestVacuous: a scenario that injected fewer faults of a kind than it needs is vacuous, and
// every scenario but the baseline names its fault kinds.
func TestVacuous(t *testing.T) {
	min := map[string]int64{"throttle": 20, "kill": 2}
	if v := Vacuous(min, map[string]int64{"throttle": 20, "kill": 2}); len(v) != 0 {
		t.Errorf("enough faults: %v", v)
	}
	if v := Vacuous(min, map[string]int64{"throttle": 19, "kill": 5}); len(v) != 1 || !strings.Contains(v[0], "19 throttle") {
		t.Errorf("19 of 20 throttles: %v", v)
	}
	if v := Vacuous(min, nil); len(v) != 2 {
		t.Errorf("nothing injected (faults-off): %v, want both kinds named", v)
	}
	for _, sc := range Scenarios() {
		if (len(sc.MinFaults) == 0) != (sc.Name == "baseline") {
			t.Errorf("%s: fault kinds %v: every scenario but the baseline names its own", sc.Name, sc.MinFaults)
		}
		for k, n := range sc.MinFaults {
			if n <= 0 {
				t.Errorf("%s: at least %d %s proves nothing", sc.Name, n, k)
			}
		}
	}
}

// TestAlarmProofs: the report counts an alarm proven by the first scenario that expected it and
// saw it fire and clear, and reads the exempt list from the docs' bullets.
func TestAlarmProofs(t *testing.T) {
	doc := "intro\n\n" + exemptMarker + " Each alarm...\n(below). Exempt, at most three:\n\n" +
		"- `SlowBurnAlarm`: takes 30 minutes. AWS-side test:\n  FIS for 35 minutes.\n- `OtherAlarm`: the same.\n\n`x_test.go` holds it.\n- `NotExempt`: a later list\n"
	exempt := ExemptFromDocs(doc)
	if strings.Join(exempt, ",") != "SlowBurnAlarm,OtherAlarm" {
		t.Fatalf("exempt %v, want SlowBurnAlarm,OtherAlarm", exempt)
	}
	s := 30.0
	rep := &Report{Deployed: []string{"AAlarm", "BAlarm", "SlowBurnAlarm"}, Exempt: exempt, Results: []Result{
		{Name: "one", Alarms: []AlarmResult{{Name: "AAlarm", Expected: true, AsExpected: true, ToAlarmSeconds: &s}, {Name: "BAlarm", Allowed: true, AsExpected: true}}},
		{Name: "two", Alarms: []AlarmResult{{Name: "BAlarm", Expected: true, AsExpected: false}}},
	}}
	rep.Summarize()
	if rep.AlarmsTotal != 3 || rep.AlarmsProven != 1 || rep.Proofs[0].Scenario != "one" || rep.Proofs[1].Scenario != "" || !rep.Proofs[2].Exempt {
		t.Errorf("total %d proven %d proofs %+v: want 3, 1 (AAlarm by one; BAlarm only allowed, then failed; SlowBurnAlarm exempt)", rep.AlarmsTotal, rep.AlarmsProven, rep.Proofs)
	}
	if !strings.Contains(rep.Figures(), "gameday_alarms_proven=1\n") {
		t.Errorf("figures: %s", rep.Figures())
	}
}

// TestJudgedIn: side by side, an alarm is judged where it is expected, else where it is first
// allowed; an allowance never spreads to the other scenarios.
func TestJudgedIn(t *testing.T) {
	got := JudgedIn([]Scenario{
		{Name: "a", Allow: map[string]string{"X": "r", "Y": "r"}},
		{Name: "b", Expect: []string{"X"}, Allow: map[string]string{"Z": "r"}},
		{Name: "c", Allow: map[string]string{"Y": "r"}},
	})
	want := map[string]string{"X": "b", "Y": "a", "Z": "b"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("JudgedIn %v, want %v", got, want)
	}
}

// TestCheckProviders breaks each provider-side detector in turn (the negative controls of the
// double send, the late send and liveness) and sees it report, from the providers' records and
// the load's own expires_at alone.
func TestCheckProviders(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	e := &Sent{EventID: "e1", Key: "k1", SubmittedAt: t0, ExpiresAt: t0.Add(3 * time.Minute), HTTP: http.StatusAccepted}
	good := func() (map[string]finalState, SimState) {
		finals := map[string]finalState{"k1": {st: Status{NotificationID: "n1", State: "sent"}, deadline: t0.Add(3 * time.Minute)}}
		sims := SimState{AcceptedByNotification: map[string]int{"n1": 1},
			Requests: []simapi.RequestEntry{{ClientRef: "n1-a1", At: t0.Add(time.Second)}}}
		return finals, sims
	}
	finals, sims := good()
	var inv Invariants
	checkProviders([]*Sent{e}, finals, sims, &inv)
	if inv.Count() != 0 {
		t.Fatalf("a good send: %v", inv.Violations)
	}
	cases := map[string]struct {
		breakIt func(map[string]finalState, *SimState)
		count   func(Invariants) int
	}{
		"double send": {func(_ map[string]finalState, s *SimState) { s.AcceptedByNotification["n1"] = 2 }, func(i Invariants) int { return i.DoubleSends }},
		// The stack reports a later deadline than the load asked for: the load's own counts.
		"late send": {func(f map[string]finalState, s *SimState) {
			f["k1"] = finalState{st: f["k1"].st, deadline: t0.Add(time.Hour)}
			s.Requests[0].At = t0.Add(3 * time.Minute)
		}, func(i Invariants) int { return i.LateSends }},
		"sent, no provider accepted it": {func(_ map[string]finalState, s *SimState) { delete(s.AcceptedByNotification, "n1") }, func(i Invariants) int { return i.Unconfirmed }},
	}
	for name, c := range cases {
		finals, sims := good()
		c.breakIt(finals, &sims)
		var inv Invariants
		checkProviders([]*Sent{e}, finals, sims, &inv)
		if c.count(inv) != 1 || inv.Count() != 1 {
			t.Errorf("%s: %+v, want it counted once", name, inv)
		}
	}
}

// TestStuck is the stuck-record detector's negative control: a record left dispatching past its
// deadline and the sweep grace is stuck; within the grace, or terminal, it is not.
func TestStuck(t *testing.T) {
	dl := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		state string
		after time.Duration
		want  bool
	}{
		{"dispatching", SweepGrace + time.Second, true},
		{"dispatch_unknown", 10 * time.Minute, true},
		{"dispatching", SweepGrace - time.Second, false},
		{"expired", 10 * time.Minute, false},
		{"sent", 10 * time.Minute, false},
	} {
		if got := stuck(c.state, dl, dl.Add(c.after)); got != c.want {
			t.Errorf("%s %s after its deadline: stuck %v, want %v", c.state, c.after, got, c.want)
		}
	}
}

// TestBurstNumberSpreadsPrefixes: a burst's destinations stay under the prefix guard's 20 a
// minute per 6-digit prefix (GuardPrefixDigits), far from the pumping prefixes.
func TestBurstNumberSpreadsPrefixes(t *testing.T) {
	per := map[string]int{}
	for range BurstCount {
		to := BurstNumber()
		if strings.HasPrefix(to, PumpPrefix) || strings.HasPrefix(to, "+121256") {
			t.Fatalf("%s... is a pumping prefix", to[:7])
		}
		per[to[1:7]]++
	}
	for p, n := range per {
		if n >= 20 {
			t.Errorf("prefix %s drew %d of %d destinations, want under the guard's 20", p, n, BurstCount)
		}
	}
}

// TestSimFaultCountsWhatTookEffect: a simulator fault is counted once every simulator took it;
// under faults-off none is called and none counted, so the scenario is vacuous.
func TestSimFaultCountsWhatTookEffect(t *testing.T) {
	var hits atomic.Int64
	sim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer sim.Close()
	s := &Stack{HTTP: sim.Client(), Sims: []string{sim.URL, sim.URL}}
	for _, sabotage := range []string{"", SabotageFaultsOff} {
		hits.Store(0)
		x := &Exec{Run: &Run{S: s, Sabotage: sabotage}, simFaults: map[string]int64{}}
		if err := x.simFault(context.Background(), "k", s.Sims, "/control/lookup", nil); err != nil {
			t.Fatal(err)
		}
		want := int64(2)
		if sabotage != "" {
			want = 0
		}
		if hits.Load() != want || x.simFaults["k"] != want/2 {
			t.Errorf("sabotage %q: %d calls, %d counted; want %d calls, %d counted", sabotage, hits.Load(), x.simFaults["k"], want, want/2)
		}
	}
}

// TestAuditLateStagesItsFaults: the digest function's KMS rule holds for the first 3/7 of the
// hold and its S3 rule for the other 4/7, added when the first ends: unsigned periods, then
// signed and unarchived ones.
func TestAuditLateStagesItsFaults(t *testing.T) {
	p, err := faultproxy.New("http://127.0.0.1:1", faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	ctx := context.Background()
	sc := AuditLate()
	x := &Exec{Run: &Run{Proxy: faultproxy.NewClient(srv.URL), Logf: t.Logf}, Scenario: sc, simFaults: map[string]int64{}, hold: 700 * time.Millisecond}
	rulesFor := func() map[string]time.Duration {
		rs, err := x.Proxy.Rules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Duration{}
		for _, r := range rs {
			if r.Function != "DigestFunction" || r.Kind != faultproxy.KindError500 {
				t.Errorf("rule %+v: want the digest function's calls answered 500", r)
			}
			out[r.Service] = r.For
		}
		return out
	}
	if err := sc.Inject(ctx, x); err != nil {
		t.Fatal(err)
	}
	if got := rulesFor(); len(got) != 1 || got["kms"] != 300*time.Millisecond {
		t.Errorf("after Inject: rules %v, want kms alone for 300ms", got)
	}
	began := time.Now()
	sc.During(ctx, x)
	if waited := time.Since(began); waited < 300*time.Millisecond {
		t.Errorf("S3 rule added after %s, before the KMS rule's 300ms ran out", waited)
	}
	if got := rulesFor(); got["s3"] != 400*time.Millisecond {
		t.Errorf("after During: rules %v, want s3 for 400ms", got)
	}
}

// TestStatTicks reads utime+stime from /proc stat lines, a command name with spaces and
// parentheses included, and refuses what is not one.
func TestStatTicks(t *testing.T) {
	line := "30013 (python (x) y) S 29325 30013 29325 0 -1 4194560 98436 0 0 0 5123 877 0 0 20 0 521 0 1\n"
	if got, err := StatTicks(line); err != nil || got != 6000 {
		t.Errorf("StatTicks = %d, %v; want 6000", got, err)
	}
	for _, bad := range []string{"", "no parenthesis 1 2 3", "1 (x) S 1 2"} {
		if _, err := StatTicks(bad); err == nil {
			t.Errorf("StatTicks(%q): no error", bad)
		}
	}
	if runtime.GOOS == "linux" {
		if share, err := CPUShare(context.Background(), os.Getpid(), 50*time.Millisecond); err != nil || share < 0 {
			t.Errorf("CPUShare of this process = %v, %v", share, err)
		}
	}
	if _, err := CPUShare(context.Background(), -1, time.Millisecond); err == nil {
		t.Error("CPUShare of no process: no error")
	}
}

// TestVacuousScenarioDoesNotWaitForItsExpectedAlarms: with no alarm in ALARM, a vacuous scenario
// (failed, its faults not injected) stops waiting at once; one that injected its faults waits for
// its expected alarm (here until the context ends).
func TestVacuousScenarioDoesNotWaitForItsExpectedAlarms(t *testing.T) {
	r := &Run{S: &Stack{Name: "st"}, Watcher: &fakeWatcher{}, Logf: t.Logf,
		Defs: map[string]AlarmDef{"AdmissionPage": {Name: "st-AdmissionPage-A", Period: 5 * time.Minute, Evals: 6}}}
	r.history = []stateSample{{time.Now(), map[string]string{"st-AdmissionPage-A": "OK"}}}
	sc := Scenario{Name: "s", Expect: []string{"AdmissionPage"}}
	for _, vacuous := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		res := Result{FaultStart: time.Now(), Vacuous: vacuous}
		began := time.Now()
		r.waitForAlarms(ctx, sc, &res, time.Now(), t.Logf)
		cancel()
		if waited := time.Since(began); vacuous && waited > 100*time.Millisecond {
			t.Errorf("vacuous: waited %s for an alarm its missing faults cannot raise", waited)
		} else if !vacuous && waited < 400*time.Millisecond {
			t.Errorf("not vacuous: waited %s, not for its expected alarm", waited)
		}
	}
}
