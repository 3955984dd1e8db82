package dynamostore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// early_receipt holds a final receipt (notify.Record.EarlyReceipt) in one string attribute,
// the most compact form DynamoDB sizes (a map costs 3 bytes, 1 per element and every key's
// name besides the values):
//
//	<state> <provider> <at, Unix milliseconds> <message ID>
//
// for example "delivered simulator 1764698400123 sim-00000152". The state keeps its stored
// name; the message ID comes last, so whatever it holds it is read back whole. A record held
// before the receipt kept its evidence holds the state alone ("delivered"), and still reads.

// formatEarlyReceipt returns rc's stored form, "" when no receipt is held.
func formatEarlyReceipt(rc notify.Receipt) string {
	if !rc.Held() {
		return ""
	}
	var at int64
	if !rc.At.IsZero() {
		at = rc.At.UnixMilli()
	}
	return string(rc.State) + " " + rc.Provider + " " + strconv.FormatInt(at, 10) + " " + rc.MessageID
}

// parseEarlyReceipt reads a stored early_receipt, in either form.
func parseEarlyReceipt(s string) (notify.Receipt, error) {
	if s == "" {
		return notify.Receipt{}, nil
	}
	f := strings.SplitN(s, " ", 4)
	rc := notify.Receipt{State: notify.State(f[0])}
	if rc.State != notify.StateDelivered && rc.State != notify.StateUndelivered {
		return notify.Receipt{}, fmt.Errorf("not a final receipt %q", f[0])
	}
	switch len(f) {
	case 1:
		return rc, nil
	case 4:
	default:
		return notify.Receipt{}, fmt.Errorf("a %s receipt of %d fields, want 4", rc.State, len(f))
	}
	ms, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || ms < 0 {
		return notify.Receipt{}, fmt.Errorf("a %s receipt's time is not Unix milliseconds", rc.State)
	}
	rc.Provider, rc.MessageID = f[1], f[3]
	if ms > 0 {
		rc.At = time.UnixMilli(ms).UTC()
	}
	return rc, nil
}
