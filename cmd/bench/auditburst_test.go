package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/dev/emulator"
	"github.com/resetnotify/resetnotify/dev/testenv"
)

// TestAuditWriteUnitsOnDynamoDBLocal holds the audit writer to its write budget: at most 2
// write units per entry (the item and its one index copy), and every entry in the index.
func TestAuditWriteUnitsOnDynamoDBLocal(t *testing.T) {
	testenv.DynamoDB(t) // skips or fails as the package documents when there is no emulator
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := auditBurst(ctx, os.Getenv(emulator.EnvDynamoDBEndpoint), 20, &out); err != nil {
		t.Fatal(err)
	}
	figures := map[string]float64{}
	for _, line := range strings.Split(out.String(), "\n") {
		name, v, _ := strings.Cut(line, "=")
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			figures[name] = f
		}
	}
	if w := figures["audit_burst_write_units_per_entry"]; w <= 0 || w > 2 {
		t.Errorf("%.2f write units per audit entry, want at most 2 (and some):\n%s", w, out.String())
	}
	if n := figures["audit_index_key_values"]; n < 2 {
		t.Errorf("the burst's entries went to %v index key values:\n%s", n, out.String())
	}
}
