package digest

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/obs"
)

// TestDigestLag: the lag is how long the oldest period not yet closed has been closable (its
// end plus the grace), 0 before that; Report emits it in seconds and warns past the bound.
func TestDigestLag(t *testing.T) {
	var metrics, logs bytes.Buffer
	d := &Digester{Period: time.Minute, Grace: 10 * time.Second, LagBound: 2 * time.Minute,
		Metrics: &obs.Metrics{W: &metrics, Function: "digest", Namespace: "test"}, Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	next := time.Date(2030, 3, 1, 9, 30, 0, 0, time.UTC) // closable from 9:31:10
	for _, tc := range []struct {
		now  time.Duration // after next
		want time.Duration
	}{
		{70 * time.Second, 0},
		{71 * time.Second, time.Second},
		{70*time.Second + 3*time.Minute, 3 * time.Minute},
	} {
		if got := d.Lag(next, next.Add(tc.now)); got != tc.want {
			t.Errorf("lag at next+%s = %s, want %s", tc.now, got, tc.want)
		}
	}
	d.Report(context.Background(), 0, next, next.Add(70*time.Second+time.Minute))
	if !strings.Contains(metrics.String(), `"DigestLag":60`) || logs.Len() != 0 {
		t.Errorf("within the bound: metrics %s, logs %s", metrics.String(), logs.String())
	}
	d.Report(context.Background(), 0, next, next.Add(70*time.Second+3*time.Minute))
	if !strings.Contains(metrics.String(), `"DigestLag":180`) || !strings.Contains(logs.String(), "audit digest step behind its lag bound") {
		t.Errorf("past the bound: metrics %s, logs %s", metrics.String(), logs.String())
	}
}
