package workercore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// admitUndecided stores an accepted record for key with a decision bound and no decision, as a
// creator killed between the put and the count leaves it.
func (f *fixture) admitUndecided(t *testing.T, key string) notify.Record {
	t.Helper()
	req := request(key, 10*time.Minute)
	sealed, err := notifytest.Sealer{}.Seal(context.Background(), key, req.Secret())
	if err != nil {
		t.Fatal(err)
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: "n-" + key, Sealed: sealed, DestinationFP: "fp", PrefixFP: "pfp"}, f.clock.Now(), notify.DefaultPolicy())
	rec.DecideBy = rec.CreatedAt.Add(notify.DefaultDecisionBound)
	if _, _, err := f.store.Admit(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestKilledCreatorsRecordIsCountedBeforeItIsSent: the sweeper hands a killed creator's
// undecided record to dispatch, which counts it first: over the limits it is refused and
// nothing is sent; within them it is counted once and sent once; with the guard failing it is
// neither sent nor changed, and the message is retried.
func TestKilledCreatorsRecordIsCountedBeforeItIsSent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		guard     *notifytest.Guard
		wantState notify.State
		wantSends int
		wantErr   bool
	}{
		{"over the limits", &notifytest.Guard{Refuse: &notify.RefusedError{Reason: notify.RefusedDestinationDay, RetryAfter: time.Hour}}, notify.StateRefused, 0, false},
		{"within the limits", &notifytest.Guard{}, notify.StateSent, 1, false},
		{"guard failing", &notifytest.Guard{Err: errors.New("throttled")}, notify.StateAccepted, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.d.Guard = tc.guard
			rec := f.admitUndecided(t, "k")
			f.clock.Advance(3 * time.Minute) // long past the bound, and the sweep grace
			if rep := f.sweep(t); rep.Seen != 1 {
				t.Fatalf("sweep saw %d records, want 1", rep.Seen)
			}
			for _, s := range f.sched.Take() {
				err := f.d.Dispatch(context.Background(), s.Message)
				if (err != nil) != tc.wantErr {
					t.Fatalf("Dispatch: %v, want error %v", err, tc.wantErr)
				}
			}
			got := f.get(t, "k")
			if got.State != tc.wantState || f.sender.Calls() != tc.wantSends {
				t.Errorf("%s after %d sends, want %s after %d", got.State, f.sender.Calls(), tc.wantState, tc.wantSends)
			}
			if n, _ := tc.guard.Counts(); tc.wantSends == 1 && n != 1 {
				t.Errorf("counted %d, want 1", n)
			}
			if tc.wantState == notify.StateRefused && (got.Reason != notify.ReasonRefusedDestinationDay || got.Version != rec.Version+1) {
				t.Errorf("refused %+v, want REFUSED_DESTINATION_DAY at v%d", got, rec.Version+1)
			}
		})
	}
}
