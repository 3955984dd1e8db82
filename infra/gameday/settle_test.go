package gameday

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestSettleStopsWhenTheRunIsCancelled: once the run's context ends (an operator's Ctrl-C),
// settling reads no more, rather than asking again, at once and without pause, until its
// deadline.
func TestSettleStopsWhenTheRunIsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls, logs := 0, 0
	get := func(ctx context.Context, key string) (Status, error) {
		calls++
		cancel()
		return Status{}, ctx.Err()
	}
	sent := []*Sent{{Key: "k1", HTTP: http.StatusAccepted}, {Key: "k2", HTTP: http.StatusAccepted}}
	finals := map[string]finalState{}
	settle(ctx, get, sent, finals, time.Now().Add(2*time.Second), func(string, ...any) { logs++ })
	if calls != len(sent) || logs != 1 || len(finals) != 0 {
		t.Errorf("after the cancel: %d reads and %d settling lines, want %d and 1 (finals %v)", calls, logs, len(sent), finals)
	}
}
