package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/trace"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/convstore"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
	intakewire "github.com/resetnotify/resetnotify/shared/wire/intake"
)

// conversionBench replays a day of traffic (package infra/trace: legitimate resets that are
// mostly used, pumping bursts that never are) through the intake's HTTP handler, built by the
// intake's own wiring at the template's defaults (guard and conversion guard on) but the
// allow-list, off (newConvReplay says why; the figures that depend on it are named
// allowlist_off_...), on DynamoDB
// Local. The clock is the trace's, compressed to nothing: events run one after the other with
// the clock set to each one's time. An admitted send is taken to sent at once, as the dispatch
// worker would (its two transitions), and counted by a conversion guard of its own, as
// dispatch counts it; a conversion goes through POST .../conversion. It prints what was
// blocked: allowlist_off_pump_sends_blocked_share (of each pumping prefix's sends after its
// first CONVERSION_MIN_SENDS), allowlist_off_legit_sends_blocked_share,
// write_units_per_conversion, and each blocked prefix's time to block.
func conversionBench(ctx context.Context, endpoint, tracePath string, out io.Writer) error {
	evs, params, err := loadTrace(tracePath)
	if err != nil {
		return err
	}
	r, drop, err := newConvReplay(ctx, endpoint, params)
	if err != nil {
		return err
	}
	defer drop()
	started := time.Now()
	for _, e := range evs {
		r.clock.Set(r.start.Add(e.At))
		if err := r.event(ctx, e); err != nil {
			return err
		}
	}
	p, _ := json.Marshal(params)
	fmt.Fprintf(out, "conversion_trace=%s\n", p)
	fmt.Fprintf(out, "conversion_replay_seconds=%.1f\n", time.Since(started).Seconds())
	r.stats.print(out, r.minSends)
	return nil
}

// loadTrace reads the trace at path, or generates the default one and writes it to
// bin/conversion-trace.jsonl so the run can be repeated with -trace.
func loadTrace(path string) ([]trace.Event, trace.Params, error) {
	params := trace.DefaultParams()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, params, fmt.Errorf("conversion trace: %w", err)
		}
		defer f.Close()
		evs, err := trace.Read(f)
		return evs, trace.Params{}, err
	}
	evs := trace.Generate(params)
	if err := os.MkdirAll("bin", 0o755); err == nil {
		if f, err := os.Create(filepath.Join("bin", "conversion-trace.jsonl")); err == nil {
			_ = trace.Write(f, evs)
			_ = f.Close()
		}
	}
	return evs, params, nil
}

// convReplay is the replay's intake, its dispatch stand-in and what they saw.
type convReplay struct {
	h        *intake.Handler
	records  *dynamostore.Store
	sender   *notify.Conversions
	clock    *notifytest.Clock
	meter    *capacityMeter
	start    time.Time
	minSends int
	stats    convStats
}

// newConvReplay wires the intake as deployed over fresh tables, its clock the trace's
// (starting tomorrow at 00:00 UTC, so no TTL written is already past), allowing the trace's
// countries.
func newConvReplay(ctx context.Context, endpoint string, params trace.Params) (*convReplay, func(), error) {
	cfg := localConfig(endpoint)
	meter := newCapacityMeter()
	meter.Instrument(&cfg)
	db, names, drop, err := deployedTables(ctx, cfg, "bench-conv")
	if err != nil {
		return nil, nil, err
	}
	local := intakeStandIns(intakeTables{notifications: names.Notifications, guard: names.Guard, conversions: names.Conversions},
		"http://127.0.0.1:1/000000000000/unused", "", localSealing(randomKey()))
	// No allow-list (the one setting off the template's defaults): the trace draws numbers
	// by calling code and random digits over eight countries, which the phone-number metadata
	// need not place, and most of which the default allow-list refuses at the door; this mode
	// measures the conversion guard, the allow-list has its own (-mode country). The figures
	// that depend on it are named allowlist_off_.... Off, explicitly.
	local[config.EnvAllowedCountries] = config.Off
	env, err := templateEnv("IntakeFunction", local)
	if err != nil {
		drop()
		return nil, nil, err
	}
	c, err := config.Load(env, config.NeedIntake)
	var in *notify.Service
	if err == nil {
		in, err = intakewire.Service(ctx, c, cfg)
	}
	if err != nil {
		drop()
		return nil, nil, fmt.Errorf("conversion bench: %w", err)
	}
	y, m, d := time.Now().UTC().Date()
	r := &convReplay{clock: notifytest.NewClock(time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)), meter: meter,
		records: dynamostore.New(db, names.Notifications), minSends: c.Conversion.Policy.MinSends, stats: newConvStats()}
	r.start = r.clock.Now()
	in.Queue, in.Clock, in.Conversions.Clock = &countingQueue{}, r.clock, r.clock
	r.sender = convstore.Guard(awsclient.DynamoDB(cfg, ""), names.Conversions, c.Conversion.Policy, r.clock)
	r.h = intake.New(in, slog.New(slog.DiscardHandler), &obs.Metrics{W: io.Discard, Function: "bench"})
	return r, drop, nil
}

// event replays one event.
func (r *convReplay) event(ctx context.Context, e trace.Event) error {
	if e.Kind == trace.KindConvert {
		if !r.stats.admitted[e.Key] {
			return nil
		}
		before := r.writes()
		resp, err := r.call(ctx, intake.RouteConvert, intake.CollectionPath+"/"+e.Key+"/conversion", e.Key, "")
		if err != nil || resp.StatusCode != 200 {
			return fmt.Errorf("conversion %s: %d %v %s", e.Key, resp.StatusCode, err, resp.Body)
		}
		r.stats.conversions++
		r.stats.conversionWrites += r.writes() - before
		return nil
	}
	body := `{"event_id":"` + e.Key + `","channel":"sms","purpose":"one_time_code","to":"` + e.To +
		`","locale":"en","params":{"code":"482913"},"expires_at":"` + r.clock.Now().Add(15*time.Minute).Format(time.RFC3339) + `"}`
	resp, err := r.call(ctx, intake.RouteSubmit, intake.CollectionPath, e.Key, body)
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case 202:
		return r.sendAdmitted(ctx, e)
	case 429:
		r.stats.refused(e, resp.Body, r.minSends)
		return nil
	}
	return fmt.Errorf("send %s: %d %s", e.Key, resp.StatusCode, resp.Body)
}

// sendAdmitted takes the admitted e to sent as the dispatch worker does and counts the send.
func (r *convReplay) sendAdmitted(ctx context.Context, e trace.Event) error {
	rec, err := r.records.Get(ctx, e.Key)
	if err != nil {
		return err
	}
	now := r.clock.Now()
	leased, err := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "bench"}, now)
	if err != nil {
		return err
	}
	sent, err := leased.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: "simulator", ProviderMessageID: "m-" + e.Key}, now)
	if err == nil {
		err = r.records.Transition(ctx, rec, leased)
	}
	if err == nil {
		err = r.records.Transition(ctx, leased, sent)
	}
	if err != nil {
		return fmt.Errorf("send %s: %w", e.Key, err)
	}
	before := r.writes()
	b, blocked, err := r.sender.Sent(ctx, sent)
	if err != nil {
		return err
	}
	r.stats.countWrites += r.writes() - before
	r.stats.sent(e, sent.PrefixFP, r.minSends)
	if blocked {
		r.stats.blocked(e, b, r.start)
	}
	return nil
}

func (r *convReplay) call(ctx context.Context, route, path, key, body string) (events.APIGatewayV2HTTPResponse, error) {
	method, _, _ := strings.Cut(route, " ")
	return r.h.Handle(ctx, events.APIGatewayV2HTTPRequest{
		RouteKey: route, RawPath: path, Body: body, PathParameters: map[string]string{intake.PathParamKey: key},
		Headers:        map[string]string{"content-type": "application/json", "idempotency-key": key},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "bench", Authorizer: localapi.Caller(localapi.LocalCallerRole), HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
	})
}

func (r *convReplay) writes() float64 {
	_, w := r.meter.Snapshot().total(nil)
	return w
}

// convStats is what the replay saw.
type convStats struct {
	admitted                                 map[string]bool
	perPrefix                                map[string]int // pumping sends tried, per number prefix
	legit, legitBlocked, legitByConversion   int
	pump, pumpBlocked, afterN, afterNBlocked int
	afterNByConversion                       int
	conversions                              int
	conversionWrites, countWrites            float64
	counted                                  int
	firstSend                                map[int]time.Duration
	blockedAfter                             map[string]time.Duration // by burst/prefix
	blockedSends                             map[string]int
}

func newConvStats() convStats {
	return convStats{admitted: map[string]bool{}, perPrefix: map[string]int{}, firstSend: map[int]time.Duration{},
		blockedAfter: map[string]time.Duration{}, blockedSends: map[string]int{}}
}

// try counts a send attempt of e and reports whether it is a pumping send past its prefix's
// first n.
func (s *convStats) try(e trace.Event, n int) bool {
	if e.Burst < 0 {
		s.legit++
		return false
	}
	if _, ok := s.firstSend[e.Burst]; !ok {
		s.firstSend[e.Burst] = e.At
	}
	s.pump++
	s.perPrefix[e.To[:7]]++
	past := s.perPrefix[e.To[:7]] > n
	if past {
		s.afterN++
	}
	return past
}

func (s *convStats) sent(e trace.Event, _ string, n int) {
	s.admitted[e.Key] = true
	s.counted++
	s.try(e, n)
}

func (s *convStats) refused(e trace.Event, body string, n int) {
	byConversion := strings.Contains(body, string(intake.ProblemPrefixBlocked))
	if !s.try(e, n) {
		if e.Burst < 0 {
			s.legitBlocked++
			if byConversion {
				s.legitByConversion++
			}
		} else {
			s.pumpBlocked++
		}
		return
	}
	s.pumpBlocked++
	s.afterNBlocked++
	if byConversion {
		s.afterNByConversion++
	}
}

func (s *convStats) blocked(e trace.Event, b notify.PrefixBlock, start time.Time) {
	name := fmt.Sprintf("burst%d_%s", e.Burst, b.PrefixFP[:6])
	s.blockedAfter[name] = b.At.Sub(start) - s.firstSend[e.Burst]
	s.blockedSends[name] = int(b.Counts.Sent)
}

func (s convStats) print(out io.Writer, n int) {
	share := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	fmt.Fprintf(out, "conversion_measured_against=DynamoDB Local; the intake's wiring at template.yaml's defaults but the allow-list, off: the figures of the traffic it let through are named allowlist_off_...\n")
	fmt.Fprintf(out, "conversion_min_sends=%d\n", n)
	const off = "allowlist_off_"
	fmt.Fprintf(out, off+"legit_sends=%d\n"+off+"pump_sends=%d\n"+off+"pump_sends_after_first_n=%d\n", s.legit, s.pump, s.afterN)
	fmt.Fprintf(out, off+"pump_sends_blocked_share=%.4f\n", share(s.afterNBlocked, s.afterN))
	fmt.Fprintf(out, off+"pump_sends_blocked_by_conversion_share=%.4f\n", share(s.afterNByConversion, s.afterN))
	fmt.Fprintf(out, off+"pump_sends_blocked_share_all=%.4f\n", share(s.pumpBlocked, s.pump))
	fmt.Fprintf(out, off+"legit_sends_blocked_share=%.4f\n", share(s.legitBlocked, s.legit))
	fmt.Fprintf(out, off+"legit_sends_blocked_by_conversion_share=%.4f\n", share(s.legitByConversion, s.legit))
	// The guard's writes per conversion and per send do not depend on the allow-list.
	fmt.Fprintf(out, "write_units_per_conversion=%.2f\n", s.conversionWrites/float64(max(1, s.conversions)))
	fmt.Fprintf(out, "counter_write_units_per_send=%.2f\n", s.countWrites/float64(max(1, s.counted)))
	names := make([]string, 0, len(s.blockedAfter))
	for k := range s.blockedAfter {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "allowlist_off_prefixes_blocked=%d\n", len(names))
	for _, k := range names {
		fmt.Fprintf(out, "allowlist_off_time_to_block_s_%s=%.0f\nallowlist_off_sends_to_block_%s=%d\n", k, s.blockedAfter[k].Seconds(), k, s.blockedSends[k])
	}
}
