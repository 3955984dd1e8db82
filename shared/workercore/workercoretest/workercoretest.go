// Package workercoretest holds hand-written fakes of the workers' ports: a scripted SMS sender
// and lookup that record every call, an in-memory due store with the sweeper's query, and a
// receipts reader. The recording queue they schedule on is notifytest.Queue. They are for the
// unit tests of the workers (package workercore's suite) and of code built on them.
package workercoretest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Sender is a scripted sms.Sender. Each Send consumes the next of Outcomes; once they run out
// the last one repeats, and with none it accepts with message ID "m-<n>". OnSend, when set,
// runs first (with the call's number, from 1) and its outcome is used instead.
type Sender struct {
	mu       sync.Mutex
	Outcomes []sms.Outcome
	OnSend   func(ctx context.Context, n int, req sms.SendRequest) sms.Outcome
	requests []sms.SendRequest
}

var _ sms.Sender = (*Sender)(nil)

// Send records req and returns the scripted outcome.
func (s *Sender) Send(ctx context.Context, req sms.SendRequest) sms.Outcome {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	onSend := s.OnSend
	var o sms.Outcome
	switch {
	case len(s.Outcomes) >= n:
		o = s.Outcomes[n-1]
	case len(s.Outcomes) > 0:
		o = s.Outcomes[len(s.Outcomes)-1]
	default:
		o = sms.Accepted(fmt.Sprintf("m-%d", n))
	}
	s.mu.Unlock()
	if onSend != nil {
		return onSend(ctx, n, req)
	}
	return o
}

// Requests returns a copy of every request sent so far.
func (s *Sender) Requests() []sms.SendRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sms.SendRequest(nil), s.requests...)
}

// Calls returns how many times Send was called.
func (s *Sender) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Answer is one scripted lookup answer.
type Answer struct {
	Result sms.LookupResult
	Err    error
}

// Lookup is a scripted sms.Lookup. Each call consumes the next of Answers; once they run out
// the last one repeats, and with none it answers inconclusive. It has no Send method.
type Lookup struct {
	mu       sync.Mutex
	Answers  []Answer
	requests []sms.LookupRequest
}

var _ sms.Lookup = (*Lookup)(nil)

// Lookup records req and returns the scripted answer. Like a real adapter, it never returns
// an error with a conclusive result.
func (l *Lookup) Lookup(_ context.Context, req sms.LookupRequest) (sms.LookupResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, req)
	n := len(l.requests)
	a := Answer{Result: sms.Inconclusive("unscripted")}
	switch {
	case len(l.Answers) >= n:
		a = l.Answers[n-1]
	case len(l.Answers) > 0:
		a = l.Answers[len(l.Answers)-1]
	}
	if a.Err != nil {
		return sms.Inconclusive("provider_error"), a.Err
	}
	return a.Result, nil
}

// Requests returns a copy of every lookup request so far.
func (l *Lookup) Requests() []sms.LookupRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sms.LookupRequest(nil), l.requests...)
}

// DueStore is a notifytest.Store with the sweeper's QueryDue. QueryErr, when set, fails
// QueryDue for the shards it lists.
type DueStore struct {
	*notifytest.Store
	QueryErr map[int]error
	mu       sync.Mutex
	queried  []int
}

// NewDueStore returns an empty due store.
func NewDueStore() *DueStore { return &DueStore{Store: notifytest.NewStore()} }

// QueryDue returns the records of shard whose next_action_at is set and at or before now,
// earliest first, at most limit of them (no limit when limit <= 0).
func (s *DueStore) QueryDue(_ context.Context, shard int, now time.Time, limit int) ([]notify.Record, error) {
	s.mu.Lock()
	s.queried = append(s.queried, shard)
	err := s.QueryErr[shard]
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var out []notify.Record
	for _, r := range s.All() {
		if r.NextActionAt.IsZero() || r.NextActionAt.After(now) || tables.DueShard(r.IdempotencyKey) != shard {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NextActionAt.Before(out[j].NextActionAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Queried returns the shards QueryDue was asked for, in order.
func (s *DueStore) Queried() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.queried...)
}

// Receipts is an sms.ReceiptReader over a map of attempt references. Err, when set, is
// returned by every call.
type Receipts struct {
	mu    sync.Mutex
	ByRef map[string]sms.Receipt
	Err   error
	reads int
}

var _ sms.ReceiptReader = (*Receipts)(nil)

// FindByAttemptRef returns the receipt stored for attemptRef.
func (r *Receipts) FindByAttemptRef(_ context.Context, attemptRef string) (sms.Receipt, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.Err != nil {
		return sms.Receipt{}, false, r.Err
	}
	rc, ok := r.ByRef[attemptRef]
	return rc, ok, nil
}

// Reads returns how many times FindByAttemptRef was called.
func (r *Receipts) Reads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}
