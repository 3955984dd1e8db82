package main

import (
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
)

// TestInProcessBuildsEveryFunction builds the in-process runtime's handlers from an
// environment as infra/local sets it: the same constructors as the Lambda mains, no emulator
// needed to build them.
func TestInProcessBuildsEveryFunction(t *testing.T) {
	_, digestPEM, err := digest.NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		config.EnvNotificationsTable: "n", config.EnvAuditTable: "a", config.EnvReceiptsTable: "r",
		config.EnvDispatchQueueURL: "http://127.0.0.1:1/q/d", config.EnvReconcileQueueURL: "http://127.0.0.1:1/q/r",
		config.EnvSealLocalKey:      "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		config.EnvDestinationPepper: "in-process-test-pepper-0123", config.EnvFingerprintKey: "in-process-test-fingerprint-key-0123456789",
		config.EnvSimulatorWebhookToken: "in-process-webhook-token-0123", config.EnvAuditDigestLocalKey: string(digestPEM),
		config.EnvSMSProvider: config.SMSSimulator, config.EnvSMSSimulatorURL: "http://127.0.0.1:1",
		config.EnvGuardTable: "g", config.EnvAllowedCountries: "US,CA", config.EnvConversionTable: "c",
	} {
		t.Setenv(k, v)
	}
	fns, err := inProcess(t.Context(), aws.Config{Region: "us-east-1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer fns.stop()
	if fns.intake == nil || fns.dispatch == nil || fns.reconcile == nil || fns.sweeper == nil || fns.digest == nil ||
		fns.audit == nil || fns.auditReplay == nil || fns.providerEvents == nil {
		t.Errorf("a handler is missing: %+v", fns)
	}
}

// TestLambdaEnv checks that the audit functions see the name and version Lambda would give
// them, and everything else as it is.
func TestLambdaEnv(t *testing.T) {
	env := lambdaEnv(func(k string) string { return "from-" + k }, "AuditFunction")
	for k, want := range map[string]string{
		config.EnvLambdaFunctionName: "AuditFunction", config.EnvLambdaFunctionVersion: "$LATEST",
		config.EnvAuditTable: "from-" + config.EnvAuditTable,
	} {
		if got := env(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
