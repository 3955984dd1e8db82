package notify_test

import (
	"slices"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// TestEachAttemptRecordsItsProvider: every lease appends the provider it goes to, and a record
// leased before the list was kept (one provider) reads as that provider for its earlier
// attempts.
func TestEachAttemptRecordsItsProvider(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	lease := func(r notify.Record, provider string) notify.Record {
		t.Helper()
		leased, err := r.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired,
			LeaseUntil: now.Add(time.Minute), LeaseToken: "t", Provider: provider}, now)
		if err != nil {
			t.Fatal(err)
		}
		next, err := leased.Apply(notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonProviderUnavailable, NextActionAt: now}, now)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	rec := notify.Record{State: notify.StateAccepted, Version: 1, DispatchDeadline: now.Add(time.Hour)}
	rec = lease(lease(rec, "endusersms"), "sinch")
	if want := []string{"endusersms", "sinch"}; !slices.Equal(rec.Providers(), want) || rec.Provider != "sinch" {
		t.Errorf("providers %v (current %q), want %v", rec.Providers(), rec.Provider, want)
	}

	legacy := notify.Record{State: notify.StateRetryScheduled, Version: 5, Attempt: 2, Provider: "sinch", DispatchDeadline: now.Add(time.Hour)}
	if want := []string{"sinch", "sinch"}; !slices.Equal(legacy.Providers(), want) {
		t.Errorf("legacy providers %v, want %v", legacy.Providers(), want)
	}
	if want := []string{"sinch", "sinch", "endusersms"}; !slices.Equal(lease(legacy, "endusersms").Providers(), want) {
		t.Errorf("legacy after a failover: %v, want %v", lease(legacy, "endusersms").Providers(), want)
	}
	if got := (notify.Record{}).Providers(); len(got) != 0 {
		t.Errorf("no attempt: %v", got)
	}
}
