package workercore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// TestDispatchCountsSendsAndBlocks: each send dispatch records is counted for its prefix (and,
// per country, by the ConversionSends metric, not a counter); the send that makes the prefix's
// conversion share low blocks it; a failing counter store never fails the send.
func TestDispatchCountsSendsAndBlocks(t *testing.T) {
	f := newFixture(t)
	store := notifytest.NewConversionStore()
	p := notify.DefaultConversionPolicy()
	p.MinSends = 3
	f.d.Conversions = &notify.Conversions{Store: store, Policy: p, Clock: f.clock}
	for i, key := range []string{"a", "b", "c"} {
		f.sender.Outcomes = []sms.Outcome{sms.Accepted("pm-" + key)}
		rec := f.admitIn(t, key, "pfx")
		f.dispatch(t, notify.MessageOf(rec))
		if got := f.get(t, key); got.State != notify.StateSent {
			t.Fatalf("send %d: %s", i, got.State)
		}
	}
	if got := store.Counts("p#pfx"); got.Sent != 3 {
		t.Errorf("prefix counted %d sends, want 3", got.Sent)
	}
	if m := f.metrics.String(); !strings.Contains(m, `"ConversionSends"`) || !strings.Contains(m, `"Country":"44"`) {
		t.Errorf("no ConversionSends metric by country 44: %s", m)
	}
	if _, blocked, _ := f.d.Conversions.Blocked(context.Background(), "pfx", f.clock.Now()); !blocked {
		t.Error("three unconverted sends did not block the prefix")
	}
	// Each judged send writes PrefixBlocks under Function alone (ConversionDropAlarm's set):
	// zeros for the two that blocked nothing, 1 for the block.
	var blocks []float64
	for _, l := range withMetric(parseEMF(t, f.metrics.String()), obs.MetricPrefixBlocks) {
		if !l.has(obs.DimFunction) || len(l.sets) != 1 {
			t.Errorf("PrefixBlocks under %v, want [Function] alone", l.sets)
		}
		blocks = append(blocks, l.values[obs.MetricPrefixBlocks])
	}
	if !slices.Equal(blocks, []float64{0, 0, 1}) {
		t.Errorf("PrefixBlocks %v over three sends, want [0 0 1]", blocks)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "prefix blocked for low conversion") || !strings.Contains(logs, `"prefix_fp":"pfx"`) {
		t.Errorf("no block logged: %s", logs)
	}
	store.Err = errors.New("table down")
	f.sender.Outcomes = []sms.Outcome{sms.Accepted("pm-d")}
	rec := f.admitIn(t, "d", "other")
	f.clock.Advance(time.Second)
	f.dispatch(t, notify.MessageOf(rec))
	if got := f.get(t, "d"); got.State != notify.StateSent {
		t.Errorf("with the counters down the send ended %s", got.State)
	}
}

// admitIn admits key as admitKey does, its number in prefix prefixFP of country 44.
func (f *fixture) admitIn(t *testing.T, key, prefixFP string) notify.Record {
	t.Helper()
	req := request(key, 10*time.Minute)
	sealed, err := notifytest.Sealer{}.Seal(context.Background(), req.IdempotencyKey, req.Secret())
	if err != nil {
		t.Fatal(err)
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: "n-" + key, Sealed: sealed, DestinationFP: "fp", PrefixFP: prefixFP, Country: "44"},
		f.clock.Now(), notify.DefaultPolicy())
	if _, _, err := f.store.Admit(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}
