package notifytest

import (
	"context"
	"sync"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// ConversionStore is an in-memory notify.ConversionStore with the real one's hourly buckets
// and conditional automatic decisions. Err, when set, is returned by every call.
type ConversionStore struct {
	mu        sync.Mutex
	sent      map[string]map[time.Time]int64 // "p#fp" -> hour -> count
	converted map[string]map[time.Time]int64
	decisions map[string]notify.PrefixBlock
	// History lists every decision written, in order.
	History []notify.PrefixBlock
	Err     error
}

var _ notify.ConversionStore = (*ConversionStore)(nil)

// NewConversionStore returns an empty store.
func NewConversionStore() *ConversionStore {
	return &ConversionStore{sent: map[string]map[time.Time]int64{}, converted: map[string]map[time.Time]int64{},
		decisions: map[string]notify.PrefixBlock{}}
}

func add(m map[string]map[time.Time]int64, key string, at time.Time) {
	if m[key] == nil {
		m[key] = map[time.Time]int64{}
	}
	m[key][at.UTC().Truncate(time.Hour)]++
}

// CountSent adds a send and sums the prefix's hourly buckets from since's hour to at's.
func (s *ConversionStore) CountSent(_ context.Context, prefixFP string, at, since time.Time) (notify.ConversionCounts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return notify.ConversionCounts{}, s.Err
	}
	add(s.sent, "p#"+prefixFP, at)
	return s.counts("p#"+prefixFP, since.UTC().Truncate(time.Hour), at), nil
}

func (s *ConversionStore) counts(key string, from, to time.Time) notify.ConversionCounts {
	var c notify.ConversionCounts
	for h, n := range s.sent[key] {
		if !h.Before(from) && !h.After(to) {
			c.Sent += n
		}
	}
	for h, n := range s.converted[key] {
		if !h.Before(from) && !h.After(to) {
			c.Converted += n
		}
	}
	return c
}

// CountConverted adds a conversion in the bucket of sentAt.
func (s *ConversionStore) CountConverted(_ context.Context, prefixFP string, sentAt time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	add(s.converted, "p#"+prefixFP, sentAt)
	return nil
}

// Counts returns the sums for a prefix ("p#"+fp) over all buckets.
func (s *ConversionStore) Counts(key string) notify.ConversionCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts(key, time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
}

// Decide writes b; an automatic decision only when none is in force at b.At.
func (s *ConversionStore) Decide(_ context.Context, b notify.PrefixBlock) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return false, s.Err
	}
	if old, ok := s.decisions[b.PrefixFP]; ok && b.By == notify.BlockedByConversion && b.At.Before(old.Until) {
		return false, nil
	}
	s.decisions[b.PrefixFP] = b
	s.History = append(s.History, b)
	return true, nil
}

// Decisions returns every stored decision.
func (s *ConversionStore) Decisions(context.Context) ([]notify.PrefixBlock, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return nil, s.Err
	}
	out := make([]notify.PrefixBlock, 0, len(s.decisions))
	for _, b := range s.decisions {
		out = append(out, b)
	}
	return out, nil
}

// Feedback is a recording notify.Feedback. Err, when set, is returned by every call.
type Feedback struct {
	mu sync.Mutex
	// Reported lists the message IDs reported as converted, one per call.
	Reported []string
	Err      error
}

var _ notify.Feedback = (*Feedback)(nil)

// Converted records providerMessageID.
func (f *Feedback) Converted(_ context.Context, _, providerMessageID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Reported = append(f.Reported, providerMessageID)
	return f.Err
}

// Calls returns the message IDs reported so far.
func (f *Feedback) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.Reported...)
}
