package obs

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A stack's functions emit into the namespace their configuration names (config.Load reads
// METRICS_NAMESPACE, the wiring passes it on), so two stacks in one account never mix; unset,
// the shared default. obs itself reads no environment: a variable set in the process changes
// nothing here.
func TestMetricsNamespace(t *testing.T) {
	t.Setenv("METRICS_NAMESPACE", StackNamespace("from-the-environment"))
	tests := []struct {
		namespace, want string
	}{
		{StackNamespace("prod-b"), "resetnotify/prod-b"},
		{"", Namespace},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		(&Metrics{W: &buf, Function: "intake", Namespace: tc.namespace}).Emit(nil, Metric{Name: "Requests", Unit: UnitCount, Value: 1})
		var line struct {
			AWS struct {
				CloudWatchMetrics []struct{ Namespace string }
			} `json:"_aws"`
		}
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil || len(line.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("EMF line %q: %v", buf.String(), err)
		}
		if got := line.AWS.CloudWatchMetrics[0].Namespace; got != tc.want {
			t.Errorf("Namespace %q: EMF namespace = %q, want %q", tc.namespace, got, tc.want)
		}
	}
}
