package auditor

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/auditfixture"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
)

func TestRecommend(t *testing.T) {
	tests := []struct {
		p99, want time.Duration
	}{
		{0, 5 * time.Second},
		{time.Second, 10 * time.Second},        // 1 s + 5 s minimum headroom → 6 s → 10 s
		{20 * time.Second, 25 * time.Second},   // 20 s + 5 s = 25 s exactly
		{21 * time.Second, 30 * time.Second},   // 21 + 5.25 = 26.25 s → 30 s
		{2 * time.Minute, 150 * time.Second},   // 120 + 30 = 150 s
		{121 * time.Second, 155 * time.Second}, // 121 + 30.25 = 151.25 s → 155 s
	}
	for _, tc := range tests {
		t.Run(tc.p99.String(), func(t *testing.T) {
			if got := Recommend(tc.p99); got != tc.want {
				t.Errorf("Recommend(%s) = %s, want %s", tc.p99, got, tc.want)
			}
		})
	}
}

func samples(n int, latency func(i int) time.Duration) []auditlog.Entry {
	var out []auditlog.Entry
	for i := range n {
		id := fmt.Sprintf("n%04d", i)
		at := auditfixture.T0.Add(time.Duration(i) * time.Minute)
		out = append(out,
			auditlog.Entry{NotificationID: id, Reason: notify.ReasonAdmitted, At: at, PolicyVersion: "p1", SafetyMarginMS: 60000},
			auditlog.Entry{NotificationID: id, Reason: notify.ReasonLeaseAcquired, At: at.Add(time.Second)},
			auditlog.Entry{NotificationID: id, Reason: notify.ReasonReceiptDelivered, At: at.Add(latency(i))},
		)
	}
	return out
}

func TestMarginSampler(t *testing.T) {
	t.Run("enough samples", func(t *testing.T) {
		var s MarginSampler
		es := samples(200, func(i int) time.Duration { return time.Duration(i+1) * 100 * time.Millisecond })
		// Entries arrive day by day, not per notification: feed them in reverse.
		for i := len(es) - 1; i >= 0; i-- {
			s.Add(es[i])
		}
		// A notification admitted before the range: its receipt alone is no sample.
		s.Add(auditlog.Entry{NotificationID: "early", Reason: notify.ReasonReceiptDelivered, At: auditfixture.T0})
		// A notification never delivered.
		s.Add(auditlog.Entry{NotificationID: "lost", Reason: notify.ReasonAdmitted, At: auditfixture.T0, PolicyVersion: "p1", SafetyMarginMS: 60000})
		want := MarginReport{
			Samples: 200, P50: 10 * time.Second, P95: 19 * time.Second, P99: 19800 * time.Millisecond, Max: 20 * time.Second,
			Enough: true, Recommended: 25 * time.Second,
			InForce: []PolicyMargin{{PolicyVersion: "p1", SafetyMarginMS: 60000, Samples: 200}},
		}
		if diff := cmp.Diff(want, s.Report()); diff != "" {
			t.Errorf("Report (-want +got):\n%s", diff)
		}
	})
	t.Run("too few samples", func(t *testing.T) {
		var s MarginSampler
		for _, e := range samples(3, func(i int) time.Duration { return time.Duration(i+2) * time.Second }) {
			s.Add(e)
		}
		want := MarginReport{
			Samples: 3, P50: 3 * time.Second, P95: 4 * time.Second, P99: 4 * time.Second, Max: 4 * time.Second,
			InForce: []PolicyMargin{{PolicyVersion: "p1", SafetyMarginMS: 60000, Samples: 3}},
		}
		if diff := cmp.Diff(want, s.Report()); diff != "" {
			t.Errorf("Report (-want +got):\n%s", diff)
		}
	})
	t.Run("no samples", func(t *testing.T) {
		var s MarginSampler
		if diff := cmp.Diff(MarginReport{InForce: []PolicyMargin{}}, s.Report()); diff != "" {
			t.Errorf("Report (-want +got):\n%s", diff)
		}
	})
}

// TestDescribeEveryReason checks that every reason of the transition table, and the purge
// reasons, has a plain-language description.
func TestDescribeEveryReason(t *testing.T) {
	states := append([]notify.State{notify.StateNone}, notify.States...)
	reasons := []notify.Reason{auditlog.ReasonPurgedTTL, auditlog.ReasonPurgedManual}
	for _, from := range states {
		for _, to := range states {
			reasons = append(reasons, notify.Reasons(from, to)...)
		}
	}
	for _, r := range reasons {
		if Describe(r) == string(r) {
			t.Errorf("no description of %s", r)
		}
	}
}
