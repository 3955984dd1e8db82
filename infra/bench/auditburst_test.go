package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/testenv"
)

// TestAuditWriteUnitsOnDynamoDBLocal holds the audit writer to its write budget: at most 1.25
// write units per entry (the item, and its share of its batch's ledger item; it was 2, with an
// index copy), none on an index, and the ledgers spread over several partition key values.
func TestAuditWriteUnitsOnDynamoDBLocal(t *testing.T) {
	testenv.DynamoDB(t) // skips or fails as the package documents when there is no emulator
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := auditBurst(ctx, os.Getenv(emulator.EnvDynamoDBEndpoint), 100, &out); err != nil {
		t.Fatal(err)
	}
	figures := map[string]float64{}
	for _, line := range strings.Split(out.String(), "\n") {
		name, v, _ := strings.Cut(line, "=")
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			figures[name] = f
		}
	}
	if w := figures["audit_burst_write_units_per_entry"]; w < 1 || w > 1.25 {
		t.Errorf("%.2f write units per audit entry, want 1 to 1.25 (the entry, its share of a ledger):\n%s", w, out.String())
	}
	if w := figures["audit_burst_index_write_units_per_entry"]; w != 0 {
		t.Errorf("%.3f index write units per audit entry, want 0:\n%s", w, out.String())
	}
	if n := figures["audit_ledger_key_values"]; n < 2 {
		t.Errorf("the burst's ledgers went to %v partition key values:\n%s", n, out.String())
	}
}
