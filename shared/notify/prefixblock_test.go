package notify_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// blockFixture is an intake with the guard and the conversion counters on a fake store, with
// a small policy: 5 sends judge a prefix, under 40 % converted blocks it for 12 h.
func blockFixture() (intakeFixture, *notify.Conversions, *notifytest.ConversionStore) {
	f := newService()
	f.in.Guard = &notifytest.Guard{}
	f.in.Countries = notifytest.Regions{"+1": "US"}.Countries("US")
	store := notifytest.NewConversionStore()
	p := notify.DefaultConversionPolicy()
	p.MinSends, p.BlockBelow = 5, 0.4
	conv := &notify.Conversions{Store: store, Policy: p, Clock: f.clock}
	f.in.Conversions = conv
	return f, conv, store
}

// pump sends n records to new numbers of the +1415555 range through f, counts each send, and
// converts those for which convert(i) holds. It returns the last block written.
func pump(t *testing.T, f intakeFixture, conv *notify.Conversions, tag string, n int, convert func(int) bool) (notify.PrefixBlock, bool) {
	t.Helper()
	var last notify.PrefixBlock
	var blocked bool
	for i := range n {
		key := fmt.Sprintf("%s-%d", tag, i)
		rec := sendRecord(t, f, key, fmt.Sprintf("+1415555%04d", i))
		if b, ok, err := conv.Sent(context.Background(), rec); err != nil {
			t.Fatal(err)
		} else if ok {
			last, blocked = b, true
		}
		if convert(i) {
			if _, err := f.in.Convert(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}
		f.clock.Advance(10 * time.Second)
	}
	return last, blocked
}

func TestPrefixBlockedAfterUnconvertedSendsAndOpenAfterThePeriod(t *testing.T) {
	ctx := context.Background()
	f, conv, store := blockFixture()
	if _, blocked := pump(t, f, conv, "a", 4, func(int) bool { return false }); blocked {
		t.Fatal("blocked before the minimum of sends")
	}
	b, blocked := pump(t, f, conv, "b", 1, func(int) bool { return false })
	if !blocked || b.Counts != (notify.ConversionCounts{Sent: 5}) || b.By != notify.BlockedByConversion {
		t.Fatalf("fifth unconverted send: blocked %v %+v, want a block at 5 sends, 0 converted", blocked, b)
	}
	_, err := f.in.Submit(ctx, parseAt(t, f, "+14155559999", "new"))
	var refused *notify.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, notify.ErrPrefixBlocked) || refused.RetryAfter <= 11*time.Hour {
		t.Fatalf("admission in a blocked prefix: %v, want prefix_blocked for about 12 h", err)
	}
	// The refusal is recorded on the key, audited as accepted → refused, and a repeat of the
	// key gets the same answer.
	rec, err := f.store.Get(ctx, "new")
	if err != nil || rec.State != notify.StateRefused || rec.Reason != notify.ReasonRefusedPrefixBlocked || !rec.RetryAt.Equal(b.Until) {
		t.Fatalf("refused record %+v %v, want refused / REFUSED_PREFIX_BLOCKED until %s", rec, err, b.Until)
	}
	_, err = f.in.Submit(ctx, parseAt(t, f, "+14155559999", "new"))
	if !errors.As(err, &refused) || refused.Reason != notify.RefusedPrefixBlocked {
		t.Errorf("repeat of the refused key: %v, want the same prefix_blocked refusal", err)
	}
	// Another range is not touched.
	if _, err := f.in.Submit(ctx, parseAt(t, f, "+14165550100", "other")); err != nil {
		t.Errorf("admission in another prefix: %v", err)
	}
	f.clock.Set(b.Until)
	if _, err := f.in.Submit(ctx, parseAt(t, f, "+14155559999", "later")); err != nil {
		t.Fatalf("admission after the block period: %v", err)
	}
	// The prefix is judged afresh from the block's end: one send does not block it again.
	if _, blocked := pump(t, f, conv, "c", 1, func(int) bool { return false }); blocked {
		t.Error("blocked again at once after the period, on the old sends")
	}
	// Every send of the range is in its prefix's counters (per country they are a metric of
	// dispatch's, not a counter).
	first, _ := f.store.Get(ctx, "a-0")
	if got := store.Counts("p#" + first.PrefixFP); got.Sent != 6 {
		t.Errorf("prefix counted %d sends, want 6", got.Sent)
	}
}

func TestPrefixThatConvertsIsNotBlocked(t *testing.T) {
	f, conv, store := blockFixture()
	// Half converted is above the 40 % threshold.
	if _, blocked := pump(t, f, conv, "a", 20, func(i int) bool { return i%2 == 0 }); blocked {
		t.Fatal("a prefix converting 50 % was blocked")
	}
	rec, _ := f.store.Get(context.Background(), "a-0")
	if got := store.Counts("p#" + rec.PrefixFP); got != (notify.ConversionCounts{Sent: 20, Converted: 10}) {
		t.Errorf("prefix counts %+v, want 20 sent, 10 converted", got)
	}
}

func TestOperatorOverride(t *testing.T) {
	ctx := context.Background()
	f, conv, store := blockFixture()
	rec := sendRecord(t, f, "probe", "+14155550000")
	allow, err := conv.Override(ctx, rec.PrefixFP, true, 24*time.Hour, "arn:aws:iam::1:user/ops", "known customer range")
	if err != nil || !allow.Allow {
		t.Fatal(allow, err)
	}
	if _, blocked := pump(t, f, conv, "a", 10, func(int) bool { return false }); blocked {
		t.Fatal("an operator's allow was overridden by the automatic block")
	}
	if _, err := conv.Override(ctx, rec.PrefixFP, false, time.Hour, "arn:aws:iam::1:user/ops", "pumping"); err != nil {
		t.Fatal(err)
	}
	_, err = f.in.Submit(ctx, parseAt(t, f, "+14155559999", "new"))
	if !errors.Is(err, notify.ErrPrefixBlocked) {
		t.Fatalf("admission under an operator's block: %v", err)
	}
	if n := len(store.History); n != 2 || store.History[1].By != "arn:aws:iam::1:user/ops" || store.History[1].Note != "pumping" {
		t.Errorf("history %+v, want the two overrides with who and why", store.History)
	}
	if _, err := conv.Override(ctx, rec.PrefixFP, false, time.Hour, notify.BlockedByConversion, ""); err == nil {
		t.Error("an override named as the automatic block was accepted")
	}
	// An override holds at most MaxOverride: a forgotten allow lapses.
	if _, err := conv.Override(ctx, rec.PrefixFP, true, notify.MaxOverride+time.Second, "arn:aws:iam::1:user/ops", "too long"); err == nil {
		t.Errorf("an override longer than %s was accepted", notify.MaxOverride)
	}
	if _, err := conv.Override(ctx, rec.PrefixFP, true, notify.MaxOverride, "arn:aws:iam::1:user/ops", "a week"); err != nil {
		t.Errorf("an override of %s: %v", notify.MaxOverride, err)
	}
}

func TestBlocksWrittenElsewhereAreSeenAfterRefresh(t *testing.T) {
	ctx := context.Background()
	f, conv, store := blockFixture()
	now := f.clock.Now()
	if _, blocked, err := conv.Blocked(ctx, "fp", now); blocked || err != nil {
		t.Fatal(blocked, err)
	}
	// Another instance (a dispatch worker) blocks the prefix.
	if _, err := store.Decide(ctx, notify.PrefixBlock{PrefixFP: "fp", Until: now.Add(time.Hour), By: notify.BlockedByConversion, At: now}); err != nil {
		t.Fatal(err)
	}
	if _, blocked, _ := conv.Blocked(ctx, "fp", now.Add(conv.Policy.Refresh-time.Millisecond)); blocked {
		t.Error("the cached list was read again before Refresh")
	}
	if _, blocked, _ := conv.Blocked(ctx, "fp", now.Add(conv.Policy.Refresh)); !blocked {
		t.Error("a block written elsewhere was not seen after Refresh")
	}
	// A failed refresh answers from the last list and says so.
	store.Err = errors.New("table unavailable")
	if _, blocked, err := conv.Blocked(ctx, "fp", now.Add(2*conv.Policy.Refresh)); !blocked || err == nil {
		t.Errorf("failed refresh: blocked %v err %v, want the cached block and the error", blocked, err)
	}
}

func TestConversionPolicyValidate(t *testing.T) {
	if err := notify.DefaultConversionPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mod := range []func(*notify.ConversionPolicy){
		func(p *notify.ConversionPolicy) { p.MinSends = 0 },
		func(p *notify.ConversionPolicy) { p.BlockBelow = 1.5 },
		func(p *notify.ConversionPolicy) { p.Window = time.Minute },
		func(p *notify.ConversionPolicy) { p.BlockFor = 0 },
	} {
		p := notify.DefaultConversionPolicy()
		mod(&p)
		if p.Validate() == nil {
			t.Errorf("%+v validated", p)
		}
	}
}

// TestConversionGuardFailuresAreHeard checks the two failures intake lets pass are not silent:
// a conversion whose counters were not updated, and a list of decisions not refreshed, each
// reach OnError, while the conversion and the admission still succeed.
func TestConversionGuardFailuresAreHeard(t *testing.T) {
	ctx := context.Background()
	f, conv, store := blockFixture()
	var heard []string
	conv.OnError = func(op string, err error) { heard = append(heard, op) }
	rec := sendRecord(t, f, "k-heard", "+14155550100")
	store.Err = errors.New("table unavailable")
	if _, err := f.in.Convert(ctx, rec.IdempotencyKey); err != nil {
		t.Fatalf("a conversion failed with its counters: %v", err)
	}
	f.clock.Advance(2 * conv.Policy.Refresh)
	if _, err := f.in.Submit(ctx, parseAt(t, f, "+14155550101", "k-heard-2")); err != nil {
		t.Fatalf("an admission failed with the list's refresh: %v", err)
	}
	if !slices.Equal(heard, []string{"count", "refresh"}) {
		t.Errorf("OnError heard %v, want [count refresh]", heard)
	}
}

// TestNoBlockListFailsClosed: a cold start whose first read of the prefix decisions fails
// answers no admission from the empty cache: the guard is unavailable (the API's 503), the
// record stays undecided and nothing is queued; once the list reads, the same request is
// admitted.
func TestNoBlockListFailsClosed(t *testing.T) {
	ctx := context.Background()
	f, _, store := blockFixture()
	store.Err = errors.New("table unavailable")
	req := parseAt(t, f, "+14155550100", "k-cold")
	if _, err := f.in.Submit(ctx, req); !errors.Is(err, notify.ErrGuardUnavailable) || !errors.Is(err, notify.ErrBlockListUnknown) {
		t.Fatalf("admission with no list of prefix decisions: %v, want the guard unavailable", err)
	}
	if n := len(f.queue.Sent()); n != 0 {
		t.Errorf("%d dispatch messages without a block check", n)
	}
	store.Err = nil
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatalf("the repeat once the list reads: %v", err)
	}
}
