package trace_test

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nyaruka/phonenumbers"

	"github.com/resetnotify/resetnotify/infra/trace"
)

// TestDefaultTraceHasItsShape: sorted, replayable, legitimate conversion within 70-95 %,
// delays from seconds to minutes, pumping never converted and in prefixes no legitimate number
// uses, every number E.164.
func TestDefaultTraceHasItsShape(t *testing.T) {
	p := trace.DefaultParams()
	events := trace.Generate(p)
	e164 := regexp.MustCompile(`^\+[1-9][0-9]{9,14}$`)
	sent := map[string]trace.Event{}
	legitPrefixes, pumpPrefixes := map[string]bool{}, map[string]bool{}
	var legit, legitConv, pump, pumpConv int
	for i, e := range events {
		if i > 0 && e.At < events[i-1].At {
			t.Fatalf("event %d at %s before its predecessor", i, e.At)
		}
		switch e.Kind {
		case trace.KindSend:
			if !e164.MatchString(e.To) {
				t.Fatalf("not E.164: %q", e.To)
			}
			sent[e.Key] = e
			if e.Burst < 0 {
				legit++
				legitPrefixes[e.To[:7]] = true
			} else {
				pump++
				pumpPrefixes[e.To[:7]] = true
			}
		case trace.KindConvert:
			s, ok := sent[e.Key]
			if d := e.At - s.At; !ok || d < 3*time.Second || d > 10*time.Minute {
				t.Fatalf("conversion of %s %s after its send (sent: %v)", e.Key, d, ok)
			}
			if s.Burst < 0 {
				legitConv++
			} else {
				pumpConv++
			}
		}
	}
	if share := float64(legitConv) / float64(legit); share < 0.70 || share > 0.95 || legit < 2000 {
		t.Errorf("%d legitimate sends, %.3f converted", legit, share)
	}
	if pump != 4*150+2*60 || pumpConv != 0 {
		t.Errorf("%d pumping sends, %d converted", pump, pumpConv)
	}
	if len(pumpPrefixes) != 4*2+2 || len(legitPrefixes) < 300 {
		t.Errorf("%d pumping prefixes, %d legitimate ones", len(pumpPrefixes), len(legitPrefixes))
	}
	for p := range pumpPrefixes {
		if legitPrefixes[p] {
			t.Errorf("prefix %s holds both", p)
		}
	}
	var buf bytes.Buffer
	if err := trace.Write(&buf, events); err != nil {
		t.Fatal(err)
	}
	back, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(events, back); diff != "" {
		t.Errorf("round trip differs:\n%s", diff)
	}
	if diff := cmp.Diff(events, trace.Generate(p)); diff != "" {
		t.Error("the same parameters gave another trace")
	}
}

// TestNumbersPassTheIntakesChecks: every number of the default trace is one the intake as
// deployed admits at its number checks (a valid mobile, or fixed-line-or-mobile, number to the
// phone-number library), so the conversion benchmark measures the guard, not refusals at the
// door; and a prefix's numbers share their first 6 digits.
func TestNumbersPassTheIntakesChecks(t *testing.T) {
	heads := map[string]bool{}
	for _, e := range trace.Generate(trace.DefaultParams()) {
		if e.Kind != trace.KindSend {
			continue
		}
		n, err := phonenumbers.Parse(e.To, "")
		if err != nil || !phonenumbers.IsValidNumber(n) {
			t.Fatalf("%s: %s is not a valid number (%v)", e.Key, e.To, err)
		}
		if k := phonenumbers.GetNumberType(n); k != phonenumbers.MOBILE && k != phonenumbers.FIXED_LINE_OR_MOBILE {
			t.Fatalf("%s: %s is of type %d, which the intake refuses", e.Key, e.To, k)
		}
		heads[e.To[:7]] = true
	}
	if len(heads) < 100 {
		t.Errorf("the trace's numbers fall under %d prefixes; want the prefixes spread", len(heads))
	}
}
