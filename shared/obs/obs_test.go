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
		// Every common way to write an E.164 number.
		{"to 447700900123 now", "to [REDACTED] now"},
		{"15555550100", "[REDACTED]"},
		{"to=%2B447700900123&x=1", "to=[REDACTED]&x=1"},
		{"to=%2b447700900123", "to=[REDACTED]"},
		{"+44 7700 900123", "[REDACTED]"},
		{"+44-7700-900123.", "[REDACTED]."},
		{"0044 7700 900123", "[REDACTED]"},
		{"(+44) 7700 900123", "([REDACTED]"},
		{"1 555 555 0100", "[REDACTED]"},
		{"44 7700 900 123", "[REDACTED]"},
		{`{"to":"447700900123"}`, `{"to":"[REDACTED]"}`},
		{"dial +4791234567 failed", "dial [REDACTED] failed"},
		// Numbers that are not phone numbers stay readable.
		{"at 2026-12-01T19:20:00Z", "at 2026-12-01T19:20:00Z"},
		{"seq order-7781#0000000003", "seq order-7781#0000000003"},
		{"shard 49668123456789012345678901234", "shard 49668123456789012345678901234"},
		{"id 01JD3K5M7N8P9Q2R3S4T5V6W7X", "id 01JD3K5M7N8P9Q2R3S4T5V6W7X"},
		{"processed 1234567 items", "processed 1234567 items"},
		{"v1.25.1 on 127.0.0.1:8000", "v1.25.1 on 127.0.0.1:8000"},
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
		`{"_aws":{"Timestamp":1762000000123,"CloudWatchMetrics":[{"Namespace":"resetnotify","Dimensions":[["Function","Route","Status"],["Function","Route"]],"Metrics":[{"Name":"Requests","Unit":"Count"},{"Name":"Latency","Unit":"Milliseconds"}]}]},"Function":"intake","Route":"POST /v1/notifications","Status":"202","Requests":1,"Latency":1.5}`,
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
		{
			name:    "no dimension at all, once",
			dims:    nil,
			rollups: [][]string{{obs.NoDimensions}, {"X", obs.NoDimensions}},
			want:    [][]string{{"Function"}, {}},
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

func TestWithSecrets(t *testing.T) {
	const (
		to   = "+447700900123"
		code = "Q7K2M9"
		link = "https://shop.example/reset/tok-71c3"
	)
	tests := []struct {
		name string
		log  func(*slog.Logger)
	}{
		{"message", func(l *slog.Logger) { l.Info("code " + code + " sent") }},
		{"string attribute", func(l *slog.Logger) { l.Info("x", "note", "the code is "+code) }},
		{"error", func(l *slog.Logger) { l.Error("x", "err", fmt.Errorf("render %q: %w", code, errors.New("too long"))) }},
		{"group", func(l *slog.Logger) { l.Info("x", slog.Group("g", "inner", "c="+code)) }},
		{"stringer", func(l *slog.Logger) { l.Info("x", "s", codeStringer(code)) }},
		{"With attributes", func(l *slog.Logger) { l.With("carried", code).Info("x") }},
		{"number without its plus", func(l *slog.Logger) { l.Info("x", "n", "dest 447700900123") }},
		{"number in the message", func(l *slog.Logger) { l.Info("sending to " + to) }},
		{"link", func(l *slog.Logger) { l.Info("x", "note", "opened "+link) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(obs.WithSecrets(obs.NewLogger(&buf, slog.LevelDebug), to, strings.TrimPrefix(to, "+"), code, link, ""))
			out := buf.String()
			for _, s := range []string{code, "447700900123", "tok-71c3"} {
				if strings.Contains(out, s) {
					t.Errorf("log line holds %q: %s", s, out)
				}
			}
			if !strings.Contains(out, obs.Redacted) {
				t.Errorf("nothing masked: %s", out)
			}
		})
	}
	// A short code is masked too, though no pattern would know it for a secret.
	var buf bytes.Buffer
	obs.WithSecrets(obs.NewLogger(&buf, slog.LevelDebug), "4821").Info("x", "note", "otp 4821 ok", "status", 4821)
	if strings.Contains(buf.String(), "otp 4821") || !strings.Contains(buf.String(), `"status":4821`) {
		t.Errorf("short secret: %s", buf.String())
	}
	if l := obs.NewLogger(&buf, slog.LevelInfo); obs.WithSecrets(l) != l || obs.WithSecrets(l, "") != l {
		t.Error("WithSecrets without secrets wraps the logger")
	}
}

type codeStringer string

func (c codeStringer) String() string { return "code=" + string(c) }

// TestHoldFoldsLinesPerInvocation checks that lines emitted between Hold and Flush are
// folded into one line per distinct metric and dimensions, their values in an EMF array (so
// CloudWatch extracts every sample), split at 100 values, and that nothing is written before
// the last Flush of nested holds.
func TestHoldFoldsLinesPerInvocation(t *testing.T) {
	var buf bytes.Buffer
	m := &obs.Metrics{W: &buf, Function: "audit", Now: func() time.Time { return time.UnixMilli(1000) }}
	m.Hold()
	m.Hold() // a second invocation of the same process, overlapping
	for i := range 150 {
		m.Emit(map[string]string{"Outcome": "written"}, obs.Metric{Name: "AuditEntries", Unit: obs.UnitCount, Value: 1})
		if i%50 == 0 {
			m.Emit(map[string]string{"Outcome": "duplicate"}, obs.Metric{Name: "AuditEntries", Unit: obs.UnitCount, Value: 1})
		}
	}
	m.Request("POST /v1/notifications", 202, 1500*time.Microsecond)
	m.Request("POST /v1/notifications", 202, 2500*time.Microsecond)
	m.Flush()
	if buf.Len() != 0 {
		t.Fatalf("wrote before the last Flush:\n%s", buf.String())
	}
	m.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 (written in 100 + 50, duplicate, requests):\n%s", len(lines), buf.String())
	}
	var sums = map[string]float64{}
	var samples = map[string]int{}
	for _, l := range lines {
		var doc map[string]any
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, l)
		}
		for _, name := range []string{"AuditEntries", "Requests", "Latency"} {
			key := name
			if o, ok := doc["Outcome"].(string); ok {
				key += "/" + o
			}
			switch v := doc[name].(type) {
			case float64:
				sums[key] += v
				samples[key]++
			case []any:
				if len(v) > obs.MaxValuesPerLine {
					t.Errorf("%s holds %d values, more than %d", name, len(v), obs.MaxValuesPerLine)
				}
				for _, x := range v {
					sums[key] += x.(float64)
					samples[key]++
				}
			}
		}
	}
	want := map[string]float64{"AuditEntries/written": 150, "AuditEntries/duplicate": 3, "Requests": 2, "Latency": 4}
	if diff := cmp.Diff(want, sums); diff != "" {
		t.Errorf("sums (-want +got):\n%s", diff)
	}
	wantSamples := map[string]int{"AuditEntries/written": 150, "AuditEntries/duplicate": 3, "Requests": 2, "Latency": 2}
	if diff := cmp.Diff(wantSamples, samples); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	// Not holding: one line per Emit, as before.
	buf.Reset()
	m.Emit(nil, obs.Metric{Name: "X", Unit: obs.UnitCount, Value: 1})
	m.Emit(nil, obs.Metric{Name: "X", Unit: obs.UnitCount, Value: 1})
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Errorf("%d lines without Hold, want 2", n)
	}
}
