package guardstore

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// countingAPI counts UpdateItem calls and answers success.
type countingAPI struct {
	mu sync.Mutex
	n  int
}

func (a *countingAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return &dynamodb.UpdateItemOutput{}, nil
}

func (a *countingAPI) calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// TestRepeatSkipsThePrefixUpdateThatDay: a destination this instance admitted today costs one
// counter update on its repeats (the destination's), and two again the next UTC day.
func TestRepeatSkipsThePrefixUpdateThatDay(t *testing.T) {
	api := &countingAPI{}
	s := New(api, "guard", notify.DefaultGuardLimits())
	d := notify.Destination{FP: "fp-1", PrefixFP: "pfp-1", CountryCode: "44"}
	now := time.Date(2026, 12, 2, 23, 58, 0, 0, time.UTC)
	for i, step := range []struct {
		at   time.Time
		want int
	}{{now, 2}, {now.Add(time.Minute), 1}, {now.Add(3 * time.Minute), 2}} {
		before := api.calls()
		if err := s.Admit(context.Background(), d, "n"+strconv.Itoa(i), step.at); err != nil {
			t.Fatal(err)
		}
		if got := api.calls() - before; got != step.want {
			t.Errorf("admission %d at %s: %d updates, want %d", i, step.at.Format(time.TimeOnly), got, step.want)
		}
	}
	if other := (notify.Destination{FP: "fp-2", PrefixFP: "pfp-1"}); s.Admit(context.Background(), other, "n-other", now) != nil || api.calls() != 7 {
		t.Errorf("another destination: %d updates in all, want 7", api.calls())
	}
}

func TestSeenTodayIsBounded(t *testing.T) {
	c := newSeenToday(2)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, fp := range []string{"a", "b", "c"} {
		c.add(fp, now)
	}
	if !c.has("a", now) || !c.has("b", now) || c.has("c", now) {
		t.Error("the set grew past its bound, or lost what it held")
	}
	if c.has("a", now.Add(12*time.Hour)) {
		t.Error("the set kept a fingerprint into the next UTC day")
	}
}

// barrierAPI holds every UpdateItem until two are in flight at once, or gives up after a
// generous wait and reports that they were not.
type barrierAPI struct {
	arrived chan struct{}
	both    chan struct{}
	once    sync.Once
	apart   bool
	mu      sync.Mutex
}

func (a *barrierAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	select {
	case a.arrived <- struct{}{}:
		// The first to arrive waits for the second.
		select {
		case <-a.both:
		case <-time.After(10 * time.Second):
			a.mu.Lock()
			a.apart = true
			a.mu.Unlock()
		}
	default:
		a.once.Do(func() { close(a.both) })
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

// TestCountersRunConcurrently: a first admission's destination and prefix updates are in
// flight at the same time (one round trip, not two).
func TestCountersRunConcurrently(t *testing.T) {
	api := &barrierAPI{arrived: make(chan struct{}, 1), both: make(chan struct{})}
	s := New(api, "guard", notify.DefaultGuardLimits())
	if err := s.Admit(context.Background(), notify.Destination{FP: "fp", PrefixFP: "pfp"}, "n", time.Now()); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.apart {
		t.Error("the destination's and the prefix's updates ran one after the other")
	}
}

// TestCountedIDSkipsTheGuardThatDay: a count ID this instance counted and admitted is admitted
// again without a request that UTC day (a replay of the key), and counted again the next day;
// a refused count is not remembered.
func TestCountedIDSkipsTheGuardThatDay(t *testing.T) {
	api := &countingAPI{}
	s := New(api, "guard", notify.DefaultGuardLimits())
	d := notify.Destination{FP: "fp-1", PrefixFP: "pfp-1", CountryCode: "44"}
	now := time.Date(2026, 12, 2, 23, 58, 0, 0, time.UTC)
	for i, step := range []struct {
		at   time.Time
		want int
	}{{now, 2}, {now.Add(time.Minute), 0}, {now.Add(3 * time.Minute), 2}} {
		before := api.calls()
		if err := s.Admit(context.Background(), d, "key-id", step.at); err != nil {
			t.Fatal(err)
		}
		if got := api.calls() - before; got != step.want {
			t.Errorf("count %d at %s: %d updates, want %d", i, step.at.Format(time.TimeOnly), got, step.want)
		}
	}
	s.counted = newSeenToday(maxSeen)
	s.limits.PerHour, s.limits.PerDay = 0, 0
	s.limits.PrefixPerMinute = 1
	refusing := &refusingAPI{}
	s.client = refusing
	for range 2 {
		if err := s.Admit(context.Background(), notify.Destination{FP: "fp-9", PrefixFP: "pfp-9"}, "refused-id", now); err == nil {
			t.Fatal("a full prefix admitted")
		}
	}
	if refusing.n != 2 {
		t.Errorf("%d updates for two refused counts, want 2 (a refusal is not remembered)", refusing.n)
	}
}

// refusingAPI fails every update's condition.
type refusingAPI struct{ n int }

func (a *refusingAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	a.n++
	return nil, &ddbtypes.ConditionalCheckFailedException{Message: aws.String("full")}
}
