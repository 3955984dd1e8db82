package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestRunRefusesBeforeMeasuring covers the refusals run makes before any benchmark touches an
// emulator.
func TestRunRefusesBeforeMeasuring(t *testing.T) {
	t.Setenv("RESETNOTIFY_DYNAMODB_ENDPOINT", "")
	t.Setenv("RESETNOTIFY_SQS_ENDPOINT", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown mode", []string{"-mode", "nope"}, `unknown -mode "nope"`},
		{"unknown mode in a list", []string{"-mode", "admission,nope"}, `unknown -mode "admission,nope"`},
		{"too few ops", []string{"-ops", "5"}, "need -ops >= 100"},
		{"too few pollers", []string{"-pollers", "0"}, "need -dispatch-n >= 10"},
		{"no digest entries", []string{"-digest-n", "0"}, "need -digest-n >= 1"},
		{"no DynamoDB endpoint", []string{"-mode", "admission"}, "RESETNOTIFY_DYNAMODB_ENDPOINT is not set"},
		{"bad flag", []string{"-nope"}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"-json", ""}, tc.args...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestRunNeedsSQSOnlyForItsModes: -mode dispatch asks for the SQS endpoint once DynamoDB's is
// there; the DynamoDB-only modes never do.
func TestRunNeedsSQSOnlyForItsModes(t *testing.T) {
	t.Setenv("RESETNOTIFY_SQS_ENDPOINT", "")
	f := benchFlags{mode: "dispatch", ops: 100, workers: 1, happy: 10, fault: 10, pollers: 1, replays: 1, digestN: 1}
	t.Setenv("RESETNOTIFY_DYNAMODB_ENDPOINT", "http://127.0.0.1:1")
	if err := runModes(context.Background(), f, io.Discard); err == nil || !strings.Contains(err.Error(), "RESETNOTIFY_SQS_ENDPOINT is not set") {
		t.Errorf("dispatch without SQS: %v", err)
	}
	for _, mode := range []string{"admission", "guard", "digest", "floor", "dispatch", "replay", "cost"} {
		if !(benchFlags{mode: "all"}).runs(mode) || !(benchFlags{mode: mode}).runs(mode) || (benchFlags{mode: "coldstart"}).runs(mode) {
			t.Errorf("runs(%q) is wrong", mode)
		}
	}
	list := benchFlags{mode: "admission,dispatch"}
	if !list.runs("admission") || !list.runs("dispatch") || list.runs("floor") || list.only("admission") || !list.only("admission", "dispatch") {
		t.Errorf("a comma-separated -mode: runs or only is wrong")
	}
}
