// Package notifytest holds hand-written fakes of the notify ports for unit tests: a clock that
// only moves when told, an in-memory store with the same conditional semantics as the real
// one, a recording queue and a reversible sealer.
package notifytest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Clock is a fake notify.Clock. The zero value starts at the zero time; use NewClock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t.UTC()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
}

// Store is an in-memory notify.Store. Err, when set, is returned by every call.
type Store struct {
	mu      sync.Mutex
	records map[string]notify.Record
	Err     error
	// Reschedules counts the Reschedule calls that won.
	Reschedules int
}

var _ notify.Store = (*Store)(nil)

// NewStore returns an empty store.
func NewStore() *Store { return &Store{records: map[string]notify.Record{}} }

// Admit stores rec unless its key exists.
func (s *Store) Admit(_ context.Context, rec notify.Record) (notify.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return notify.Record{}, false, s.Err
	}
	if old, ok := s.records[rec.IdempotencyKey]; ok {
		return old, false, nil
	}
	s.records[rec.IdempotencyKey] = rec
	return rec, true, nil
}

// Get returns the record for key.
func (s *Store) Get(_ context.Context, key string) (notify.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return notify.Record{}, s.Err
	}
	rec, ok := s.records[key]
	if !ok {
		return notify.Record{}, fmt.Errorf("notifytest.get %s: %w", key, notify.ErrNotFound)
	}
	return rec, nil
}

// Transition replaces prev by next if the stored version is still prev's.
func (s *Store) Transition(_ context.Context, prev, next notify.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	cur, ok := s.records[prev.IdempotencyKey]
	if !ok {
		return fmt.Errorf("notifytest.transition %s: %w", prev.IdempotencyKey, notify.ErrConflict)
	}
	held := prev.State == notify.StateDispatching && !prev.EarlyReceipt.Held() && cur.EarlyReceipt.Held()
	if cur.Version != prev.Version || held {
		return fmt.Errorf("notifytest.transition %s: %w", prev.IdempotencyKey, &notify.ConflictError{Current: cur})
	}
	if next.State == notify.StateDispatching && !next.UpdatedAt.Before(cur.DispatchDeadline) {
		return fmt.Errorf("notifytest.transition %s: deadline: %w", prev.IdempotencyKey, notify.ErrConflict)
	}
	if next.State == notify.StateRefused && !cur.DecidedAt.IsZero() {
		return fmt.Errorf("notifytest.transition %s: settled: %w", prev.IdempotencyKey, &notify.ConflictError{Current: cur})
	}
	s.records[prev.IdempotencyKey] = next
	return nil
}

// Reschedule writes next's NextActionAt and RequeuedAt if the stored version and NextActionAt
// are still prev's.
func (s *Store) Reschedule(_ context.Context, prev, next notify.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	cur, ok := s.records[prev.IdempotencyKey]
	if !ok || cur.Version != prev.Version || !cur.NextActionAt.Equal(prev.NextActionAt) {
		return fmt.Errorf("notifytest.reschedule %s: %w", prev.IdempotencyKey, notify.ErrConflict)
	}
	cur.NextActionAt, cur.RequeuedAt = next.NextActionAt, next.RequeuedAt
	s.records[prev.IdempotencyKey] = cur
	s.Reschedules++
	return nil
}

// Settle sets DecidedAt on rec if the stored record is still rec's version, accepted and not
// settled.
func (s *Store) Settle(_ context.Context, rec notify.Record, at time.Time) (notify.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return notify.Record{}, s.Err
	}
	cur, ok := s.records[rec.IdempotencyKey]
	if !ok || cur.Version != rec.Version || cur.State != notify.StateAccepted || !cur.DecidedAt.IsZero() {
		return notify.Record{}, fmt.Errorf("notifytest.settle %s: %w", rec.IdempotencyKey, &notify.ConflictError{Current: cur})
	}
	cur.DecidedAt = at
	s.records[rec.IdempotencyKey] = cur
	return cur, nil
}

// HoldReceipt keeps receipt on the record if it is still rec's version, dispatching, and holds
// none yet. Like the real store, it refuses a receipt that is not final.
func (s *Store) HoldReceipt(_ context.Context, rec notify.Record, receipt notify.Receipt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	if receipt.State != notify.StateDelivered && receipt.State != notify.StateUndelivered {
		return fmt.Errorf("notifytest.hold_receipt %s: %s receipt", rec.IdempotencyKey, receipt.State)
	}
	cur, ok := s.records[rec.IdempotencyKey]
	if !ok || cur.Version != rec.Version || cur.State != notify.StateDispatching || cur.EarlyReceipt.Held() {
		return fmt.Errorf("notifytest.hold_receipt %s: %w", rec.IdempotencyKey, &notify.ConflictError{Current: cur})
	}
	cur.EarlyReceipt = receipt
	s.records[rec.IdempotencyKey] = cur
	return nil
}

// All returns a copy of every stored record.
func (s *Store) All() []notify.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]notify.Record, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, r)
	}
	return out
}

// Enqueued is one message a Queue was given.
type Enqueued struct {
	Queue   notify.QueueName
	Message notify.Message
	Delay   time.Duration
	// At is when the message becomes visible: the queue's clock plus Delay (zero without a
	// clock).
	At time.Time
}

// Queue is a recording notify.Queue, for intake and the workers alike. Err, when set, is
// returned instead of recording. Clock, when set, stamps each message's At.
type Queue struct {
	mu       sync.Mutex
	enqueued []Enqueued
	taken    int
	Err      error
	Clock    notify.Clock
}

var _ notify.Queue = (*Queue)(nil)

// Enqueue records m for queue.
func (q *Queue) Enqueue(_ context.Context, queue notify.QueueName, m notify.Message, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return q.Err
	}
	e := Enqueued{Queue: queue, Message: m, Delay: delay}
	if q.Clock != nil {
		e.At = q.Clock.Now().Add(delay)
	}
	q.enqueued = append(q.enqueued, e)
	return nil
}

// Sent returns a copy of the recorded messages, of every queue.
func (q *Queue) Sent() []notify.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]notify.Message, 0, len(q.enqueued))
	for _, e := range q.enqueued {
		out = append(out, e.Message)
	}
	return out
}

// All returns a copy of everything enqueued so far.
func (q *Queue) All() []Enqueued {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Enqueued(nil), q.enqueued...)
}

// Take returns what was enqueued since the last Take, so a test can run the workers like
// queues: take the messages, hand each to its worker, repeat.
func (q *Queue) Take() []Enqueued {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := append([]Enqueued(nil), q.enqueued[q.taken:]...)
	q.taken = len(q.enqueued)
	return out
}

// Sealer is a reversible fake: it is not encryption, so it must never be used outside tests.
// It binds the payload to the key as the real sealer does.
type Sealer struct{}

var (
	_ notify.Sealer            = Sealer{}
	_ notify.OwnerHasher       = Sealer{}
	_ notify.Opener            = Sealer{}
	_ notify.DestinationHasher = Sealer{}
	_ notify.RequestHasher     = Sealer{}
)

// Seal encodes s with the key prefixed.
func (Sealer) Seal(_ context.Context, key string, s notify.Secret) ([]byte, error) {
	b, err := json.Marshal(struct {
		Key    string        `json:"key"`
		Secret notify.Secret `json:"secret"`
	}{key, s})
	return b, err
}

// Open decodes what Seal made, refusing a payload sealed under another key.
func (Sealer) Open(_ context.Context, key string, sealed []byte) (notify.Secret, error) {
	var v struct {
		Key    string        `json:"key"`
		Secret notify.Secret `json:"secret"`
	}
	if err := json.Unmarshal(sealed, &v); err != nil {
		return notify.Secret{}, fmt.Errorf("notifytest.open: %w", err)
	}
	if v.Key != key {
		return notify.Secret{}, errors.New("notifytest.open: sealed under another key")
	}
	return v.Secret, nil
}

// DestinationFP returns an unkeyed hash prefix; the real one is an HMAC with a pepper.
func (Sealer) DestinationFP(e164 string) string {
	sum := sha256.Sum256([]byte("test-pepper:" + e164))
	return hex.EncodeToString(sum[:8])
}

// RequestFP returns an unkeyed hash of canonical; the real one is an HMAC with a secret key.
func (Sealer) RequestFP(canonical []byte) string {
	sum := sha256.Sum256(append([]byte("test-fingerprint:"), canonical...))
	return hex.EncodeToString(sum[:])
}

// SameRequest reports whether stored is RequestFP(canonical).
func (s Sealer) SameRequest(stored string, canonical []byte) bool {
	return stored == s.RequestFP(canonical)
}

// OwnerFP returns a test owner fingerprint of principal.
func (Sealer) OwnerFP(principal string) string {
	sum := sha256.Sum256([]byte("test-owner:" + principal))
	return hex.EncodeToString(sum[:8])
}

// IDs returns a generator of predictable notification IDs: prefix-0001, prefix-0002, ...
func IDs(prefix string) func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%s-%04d", prefix, n)
	}
}

// Guard is a fake notify.Guard: it fails with Err, or refuses with Refuse when that is set,
// and otherwise admits, counting each notification once, as the real guard does.
type Guard struct {
	mu sync.Mutex
	// Err, when set, is returned by every Admit: the guard's storage failing.
	Err error
	// Refuse, when set, is returned by every Admit of a notification not counted yet (and
	// then Admit counts nothing, unless Refuse.DestinationCounted is set).
	Refuse *notify.RefusedError
	// Admitted and Released list the destinations Admit counted and Release took back.
	Admitted, Released []notify.Destination
	// Calls counts every Admit, counted or not.
	Calls int
	// Before, when set, is called at the start of every Admit (a test's hook to act while the
	// creator is deciding).
	Before  func()
	counted map[string]bool
}

var _ notify.Guard = (*Guard)(nil)

// Admit fails with g.Err, admits a notification counted already, refuses with g.Refuse, or
// counts the notification.
func (g *Guard) Admit(_ context.Context, d notify.Destination, notificationID string, _ time.Time) error {
	if g.Before != nil {
		g.Before()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Calls++
	if g.Err != nil {
		return g.Err
	}
	if g.counted[notificationID] {
		return nil
	}
	if g.Refuse != nil {
		r := *g.Refuse
		r.DestinationFP, r.CountryCode = d.FP, d.CountryCode
		if r.DestinationCounted {
			g.count(d, notificationID)
		}
		return &r
	}
	g.count(d, notificationID)
	return nil
}

func (g *Guard) count(d notify.Destination, notificationID string) {
	if g.counted == nil {
		g.counted = map[string]bool{}
	}
	g.counted[notificationID] = true
	g.Admitted = append(g.Admitted, d)
}

// Release records d and forgets the notification's count.
func (g *Guard) Release(_ context.Context, d notify.Destination, notificationID string, _ time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.counted[notificationID] {
		delete(g.counted, notificationID)
		g.Released = append(g.Released, d)
	}
	return nil
}

// Counts returns how many admissions were counted and released.
func (g *Guard) Counts() (admitted, released int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.Admitted), len(g.Released)
}

// SleepOn returns a sleep for notify.Service.Sleep that only moves clock forward by the time
// asked, so a waiting duplicate's loop runs in no real time.
func SleepOn(clock *Clock) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		clock.Advance(d)
		return ctx.Err()
	}
}
