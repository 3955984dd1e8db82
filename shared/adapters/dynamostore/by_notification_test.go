package dynamostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

func TestKeyByNotificationID(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, r := range []notify.Record{
		newRecord("k-a", "evt-a", "01JNOTIFA", t0, t0.Add(15*time.Minute)),
		newRecord("k-b", "evt-b", "01JNOTIFB", t0, t0.Add(15*time.Minute)),
	} {
		if _, _, err := f.store.Admit(ctx, r); err != nil {
			t.Fatal(err)
		}
		// The index is sparse: an admitted record is not in it (admission writes one index
		// only), a leased one is.
		if _, err := f.store.KeyByNotificationID(ctx, r.NotificationID); !errors.Is(err, notify.ErrNotFound) {
			t.Fatalf("KeyByNotificationID(%s) before its lease: %v, want ErrNotFound", r.NotificationID, err)
		}
		leased, err := r.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "lease", LeaseUntil: t0.Add(time.Minute)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.Transition(ctx, r, leased); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, id, want string
		notFound       bool
	}{
		{name: "first", id: "01JNOTIFA", want: "k-a"},
		{name: "second", id: "01JNOTIFB", want: "k-b"},
		{name: "unknown", id: "01JNOTIFZ", notFound: true},
		{name: "empty", id: "", notFound: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.calls.queries.Store(0)
			got, err := f.store.KeyByNotificationID(ctx, tc.id)
			if tc.notFound {
				if !errors.Is(err, notify.ErrNotFound) {
					t.Fatalf("KeyByNotificationID(%q) = %q, %v; want ErrNotFound", tc.id, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("KeyByNotificationID(%q) = %q, %v; want %q", tc.id, got, err, tc.want)
			}
			if q := f.calls.queries.Load(); q != 1 {
				t.Errorf("%d Query calls, want 1", q)
			}
		})
	}
}
