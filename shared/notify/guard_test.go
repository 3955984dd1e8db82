package notify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

func TestSubmitGuardCountsOnlyNewAdmissions(t *testing.T) {
	ctx := context.Background()
	f := newIntake()
	guard := &notifytest.Guard{}
	f.in.Guard = guard
	req := parse(t, body(nil), "k")
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	again, err := f.in.Submit(ctx, req)
	if err != nil || !again.Replayed {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if n, _ := guard.Counts(); n != 1 {
		t.Errorf("counted %d admissions for one key, want 1", n)
	}
	// A replay is never refused, even when the guard would refuse a new admission now.
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: time.Minute}
	if again, err := f.in.Submit(ctx, req); err != nil || !again.Replayed {
		t.Fatalf("replay under a full window: %+v %v", again, err)
	}
	_, err = f.in.Submit(ctx, parse(t, body(nil), "k2"))
	if !errors.Is(err, notify.ErrRateLimited) {
		t.Fatalf("new key under a full window: %v, want ErrRateLimited", err)
	}
	if _, err := f.in.Status(ctx, "k2"); !errors.Is(err, notify.ErrNotFound) {
		t.Errorf("a refused admission left a record: %v", err)
	}
}

// raceStore is a Store whose first Get misses although the record exists: a concurrent first
// request with the same key wins the put between this request's read and its put.
type raceStore struct {
	*notifytest.Store
	missed bool
}

func (s *raceStore) Get(ctx context.Context, key string) (notify.Record, error) {
	if !s.missed {
		s.missed = true
		return notify.Record{}, notify.ErrNotFound
	}
	return s.Store.Get(ctx, key)
}

func TestSubmitGuardReleasesWhenTheKeyWasTaken(t *testing.T) {
	ctx := context.Background()
	f := newIntake()
	req := parse(t, body(nil), "k")
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	guard := &notifytest.Guard{}
	f.in.Guard, f.in.Store = guard, &raceStore{Store: f.store}
	again, err := f.in.Submit(ctx, req)
	if err != nil || !again.Replayed {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if admitted, released := guard.Counts(); admitted != 1 || released != 1 {
		t.Errorf("counted %d, released %d; want the lost race's count released", admitted, released)
	}
}
