package notify_test

import (
	"context"
	"testing"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

// TestOneFormPerNumber: a number written with its national prefix after the calling code
// (+1 1 201 ..., +33 0 6 ...) is the same number as its E.164 form: the same destination and
// prefix fingerprints for the guard, the same request fingerprint, and the E.164 form sealed
// for the provider.
func TestOneFormPerNumber(t *testing.T) {
	for _, tc := range []struct{ canonical, other string }{
		{"+12015550123", "+112015550123"},
		{"+33612345678", "+330612345678"},
	} {
		f := newService()
		guard := &notifytest.Guard{}
		f.in.Guard = guard
		var err error
		if f.in.Countries, err = notify.NewCountries([]string{"US", "FR"}, phoneregion.Regions{}); err != nil {
			t.Fatal(err)
		}
		var fps []string
		for _, to := range []string{tc.canonical, tc.other} {
			sub, err := f.in.Submit(context.Background(), parse(t, body(func(m map[string]any) { m["to"] = to }), "k"+to[1:]))
			if err != nil {
				t.Fatalf("%s: %v", to, err)
			}
			secret, err := (notifytest.Sealer{}).Open(context.Background(), sub.Record.IdempotencyKey, sub.Record.Sealed)
			if err != nil {
				t.Fatal(err)
			}
			if secret.To != tc.canonical {
				t.Errorf("%s sealed for the provider as %s, want %s", to, secret.To, tc.canonical)
			}
			fps = append(fps, sub.Record.DestinationFP+" "+sub.Record.PrefixFP+" "+sub.Record.RequestFingerprint)
		}
		if fps[0] != fps[1] {
			t.Errorf("%s and %s have different fingerprints: %q", tc.canonical, tc.other, fps)
		}
		if len(guard.Admitted) != 2 || guard.Admitted[0].FP != guard.Admitted[1].FP || guard.Admitted[0].PrefixFP != guard.Admitted[1].PrefixFP {
			t.Errorf("the guard counted %+v, want the same destination twice", guard.Admitted)
		}
	}
}
