package obs

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A stack's functions emit into the namespace its template names, so two stacks in one
// account never mix; unset, the shared default.
func TestMetricsNamespace(t *testing.T) {
	env := map[string]string{EnvMetricsNamespace: StackNamespace("prod-a")}
	if got := namespaceFrom(func(k string) string { return env[k] }); got != "resetnotify/prod-a" {
		t.Errorf("namespace from the environment = %q", got)
	}
	if got := namespaceFrom(func(string) string { return "" }); got != Namespace {
		t.Errorf("namespace without the variable = %q, want %q", got, Namespace)
	}
	var buf bytes.Buffer
	(&Metrics{W: &buf, Function: "intake", Namespace: StackNamespace("prod-b")}).Emit(nil, Metric{Name: "Requests", Unit: UnitCount, Value: 1})
	var line struct {
		AWS struct {
			CloudWatchMetrics []struct{ Namespace string }
		} `json:"_aws"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || len(line.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("EMF line %q: %v", buf.String(), err)
	}
	if got := line.AWS.CloudWatchMetrics[0].Namespace; got != "resetnotify/prod-b" {
		t.Errorf("EMF namespace = %q, want resetnotify/prod-b", got)
	}
}
