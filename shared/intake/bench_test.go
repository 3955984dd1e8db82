package intake_test

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSubmit measures the handler's own cost for a first admission (decode, validate,
// fingerprint, status view, log line and metric) with an in-memory store: the CPU and
// allocations our code adds to each request, without the database.
func BenchmarkSubmit(b *testing.B) {
	f := newFixture(b)
	expires := t0.Add(15 * time.Minute).Format(time.RFC3339)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := fmt.Sprintf(`{"event_id":"bench-%d","channel":"sms","purpose":"password_reset","to":"%s","params":{"reset_url":%q},"expires_at":%q}`,
			i, phone, resetURL, expires)
		resp, err := f.h.Handle(ctx, post(body))
		if err != nil || resp.StatusCode != 202 {
			b.Fatalf("status %d, err %v", resp.StatusCode, err)
		}
	}
}

// BenchmarkReplay measures a replay, which the store answers from the same conditional put.
func BenchmarkReplay(b *testing.B) {
	f := newFixture(b)
	body := fmt.Sprintf(`{"event_id":"bench","channel":"sms","purpose":"password_reset","to":"%s","params":{"reset_url":%q},"expires_at":%q}`,
		phone, resetURL, t0.Add(15*time.Minute).Format(time.RFC3339))
	ctx := context.Background()
	if resp, _ := f.h.Handle(ctx, post(body)); resp.StatusCode != 202 {
		b.Fatalf("first status %d", resp.StatusCode)
	}
	b.ReportAllocs()
	for b.Loop() {
		if resp, _ := f.h.Handle(ctx, post(body)); resp.StatusCode != 200 {
			b.Fatalf("replay status %d", resp.StatusCode)
		}
	}
}
