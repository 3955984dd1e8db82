package notify_test

import (
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

func BenchmarkParseRequest(b *testing.B) {
	p := notify.DefaultPolicy()
	raw := body(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := notify.ParseRequest(raw, "k", t0, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonical(b *testing.B) {
	req, err := notify.ParseRequest(body(nil), "k", t0, notify.DefaultPolicy())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = req.Canonical()
	}
}

func BenchmarkApplyLease(b *testing.B) {
	req, err := notify.ParseRequest(body(nil), "k", t0, notify.DefaultPolicy())
	if err != nil {
		b.Fatal(err)
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: "n"}, t0, notify.DefaultPolicy())
	ch := notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: t0.Add(time.Minute)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rec.Apply(ch, t0.Add(time.Second)); err != nil {
			b.Fatal(err)
		}
	}
}
