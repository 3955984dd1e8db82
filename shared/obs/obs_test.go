package obs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/obs"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"to +447700900123 now", "to [REDACTED] now"},
		{"+1 (555) 123-4567", "[REDACTED]"},
		{"see https://shop.example/reset?t=abc&u=1 ok", "see [REDACTED] ok"},
		{`{"u":"HTTP://x.example/a"}`, `{"u":"[REDACTED]"}`},
		{"escaped https:\\/\\/x.example\\/r", "escaped [REDACTED]"},
		{"key a:b:c v+3", "key a:b:c v+3"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := obs.Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

type stringer struct{}

func (stringer) String() string { return "call +15550001111" }

func TestLoggerGuard(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelDebug)
	secrets := []string{"+15550001111", "https://shop.example/reset/XYZ", "CODE9876", "pepperpepper"}
	log.Info("event",
		"to", "+15550001111",
		"params", map[string]string{"reset_url": "https://shop.example/reset/XYZ"},
		slog.Group("req", "code", "CODE9876", "ok", "fine"),
		"err", fmt.Errorf("wrap: %w", errors.New("dial https://shop.example/reset/XYZ")),
		"s", stringer{},
		"raw", []byte("pepperpepper"),
		"any", struct{ P string }{"+15550001111"},
		"status", 202,
	)
	out := buf.String()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("log line holds %q: %s", s, out)
		}
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log line is not JSON: %v", err)
	}
	if line["status"] != float64(202) || line["req"].(map[string]any)["ok"] != "fine" {
		t.Errorf("guard changed harmless attributes: %s", out)
	}
	if line["to"] != obs.Redacted {
		t.Errorf("to = %v, want %q", line["to"], obs.Redacted)
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"DEBUG", slog.LevelDebug, false},
		{"warn", slog.LevelWarn, false},
		{" error ", slog.LevelError, false},
		{"verbose", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := obs.ParseLevel(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseLevel(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

func TestMetricsEMF(t *testing.T) {
	var buf bytes.Buffer
	m := &obs.Metrics{W: &buf, Function: "intake", Now: func() time.Time { return time.UnixMilli(1762000000123) }}
	m.Request("POST /v1/notifications", 202, 1500*time.Microsecond)
	m.Transition("accepted", "ADMITTED")
	var nilMetrics *obs.Metrics
	nilMetrics.Request("x", 200, 0) // must not panic

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	want := []string{
		`{"_aws":{"Timestamp":1762000000123,"CloudWatchMetrics":[{"Namespace":"resetnotify","Dimensions":[["Function","Route","Status"]],"Metrics":[{"Name":"Requests","Unit":"Count"},{"Name":"Latency","Unit":"Milliseconds"}]}]},"Function":"intake","Route":"POST /v1/notifications","Status":"202","Requests":1,"Latency":1.5}`,
		`{"_aws":{"Timestamp":1762000000123,"CloudWatchMetrics":[{"Namespace":"resetnotify","Dimensions":[["Function","Reason","ToState"],["Function","ToState"]],"Metrics":[{"Name":"Transitions","Unit":"Count"}]}]},"Function":"intake","ToState":"accepted","Reason":"ADMITTED","Transitions":1}`,
	}
	for i := range want {
		var got, exp any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if err := json.Unmarshal([]byte(want[i]), &exp); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(exp, got); d != "" {
			t.Errorf("line %d (-want +got):\n%s", i, d)
		}
	}
}

func TestMetricsRollup(t *testing.T) {
	tests := []struct {
		name    string
		dims    map[string]string
		rollups [][]string
		want    [][]string
	}{
		{
			name:    "rollup by one key",
			dims:    map[string]string{"Provider": "p", "Class": "unknown", "Detail": "timeout"},
			rollups: [][]string{{"Provider"}},
			want:    [][]string{{"Function", "Class", "Detail", "Provider"}, {"Function", "Provider"}},
		},
		{
			name:    "keys sorted, Function first, unknown keys and duplicates dropped",
			dims:    map[string]string{"B": "1", "A": "2", "C": "3"},
			rollups: [][]string{{"C", "A", "Missing", "Function"}, {"A", "C"}, {"A", "B", "C"}},
			want:    [][]string{{"Function", "A", "B", "C"}, {"Function", "A", "C"}},
		},
		{
			name:    "Function alone",
			dims:    map[string]string{"State": "x"},
			rollups: [][]string{{}},
			want:    [][]string{{"Function", "State"}, {"Function"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			m := &obs.Metrics{W: &buf, Function: "dispatch"}
			m.EmitRollup(tc.dims, tc.rollups, obs.Metric{Name: "N", Unit: obs.UnitCount, Value: 1})
			var line struct {
				AWS struct {
					CloudWatchMetrics []struct {
						Namespace  string
						Dimensions [][]string
					}
				} `json:"_aws"`
			}
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, buf.String())
			}
			if n := len(line.AWS.CloudWatchMetrics); n != 1 {
				t.Fatalf("%d directives, want 1", n)
			}
			if d := cmp.Diff(tc.want, line.AWS.CloudWatchMetrics[0].Dimensions); d != "" {
				t.Errorf("dimension sets (-want +got):\n%s", d)
			}
		})
	}
}
