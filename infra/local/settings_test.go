package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/testenv"
)

const (
	templatePath = "../../template.yaml"
	makefilePath = "../../Makefile"
)

// TestSettingsFollowTheTemplate edits template.yaml's values in a copy and checks that the
// local stack's settings follow: nothing is copied by hand into infra/local.
func TestSettingsFollowTheTemplate(t *testing.T) {
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	edits := []struct{ old, new string }{
		{"      VisibilityTimeout: 180\n      # Tokens live", "      VisibilityTimeout: 181\n      # Tokens live"},
		{"        maxReceiveCount: 5\n\n  # Only the functions that schedule sends enqueue", "        maxReceiveCount: 7\n\n  # Only the functions that schedule sends enqueue"},
		{"    Timeout: 10\n    MemorySize: 256\n", "    Timeout: 11\n    MemorySize: 384\n"},
		{"      Timeout: 30\n      Environment:\n        Variables:\n          DISPATCH_QUEUE_URL: !Ref DispatchQueue\n          RECONCILE_QUEUE_URL: !Ref ReconcileQueue\n          SMS_PROVIDERS: !Ref SmsProviders\n          SMS_TIMEOUT: !Sub ${SmsTimeoutSeconds}s\n          SMS_VISIBILITY_SECONDS: !Ref SmsVisibilitySeconds\n          SMS_ORIGINATION_IDENTITY: !Ref SmsOriginationIdentity\n          SMS_CONFIGURATION_SET: !Ref SmsConfigurationSet\n          # Every send names it: End User Messaging blocks what AllowedCountries does not list.\n          SMS_PROTECT_CONFIGURATION_ID: !If [UseEndUserSms, !If [SmsProtectOff, \"off\", !Ref SmsProtectConfiguration], \"\"]\n          SMS_SIMULATOR_URL: !Ref SmsSimulatorUrl\n          SMS_SIMULATOR2_URL: !Ref SmsSimulator2Url\n          SINCH_BASE_URL: !Ref SinchBaseUrl\n          SINCH_SERVICE_PLAN_ID: !Ref SinchServicePlanId\n          SINCH_FROM: !Ref SinchFrom\n          SINCH_API_TOKEN_PARAM: !Ref SinchApiTokenParameter\n          # Sinch's delivery reports",
			"      Timeout: 29\n      Environment:\n        Variables:\n          DISPATCH_QUEUE_URL: !Ref DispatchQueue\n          RECONCILE_QUEUE_URL: !Ref ReconcileQueue\n          SMS_PROVIDERS: !Ref SmsProviders\n          SMS_TIMEOUT: !Sub ${SmsTimeoutSeconds}s\n          SMS_VISIBILITY_SECONDS: !Ref SmsVisibilitySeconds\n          SMS_ORIGINATION_IDENTITY: !Ref SmsOriginationIdentity\n          SMS_CONFIGURATION_SET: !Ref SmsConfigurationSet\n          # Every send names it: End User Messaging blocks what AllowedCountries does not list.\n          SMS_PROTECT_CONFIGURATION_ID: !If [UseEndUserSms, !If [SmsProtectOff, \"off\", !Ref SmsProtectConfiguration], \"\"]\n          SMS_SIMULATOR_URL: !Ref SmsSimulatorUrl\n          SMS_SIMULATOR2_URL: !Ref SmsSimulator2Url\n          SINCH_BASE_URL: !Ref SinchBaseUrl\n          SINCH_SERVICE_PLAN_ID: !Ref SinchServicePlanId\n          SINCH_FROM: !Ref SinchFrom\n          SINCH_API_TOKEN_PARAM: !Ref SinchApiTokenParameter\n          # Sinch's delivery reports"},
		{"            Queue: !GetAtt DispatchQueue.Arn\n            BatchSize: 10", "            Queue: !GetAtt DispatchQueue.Arn\n            BatchSize: 4"},
		{"            BatchSize: 100\n            MaximumBatchingWindowInSeconds: 1", "            BatchSize: 50\n            MaximumBatchingWindowInSeconds: 2"},
		{"Schedule: rate(1 minute)\n            Description: resetnotify sweeper", "Schedule: rate(5 minutes)\n            Description: resetnotify sweeper"},
		{"Schedule: rate(1 minute)\n            Description: resetnotify audit digests", "Schedule: rate(2 minutes)\n            Description: resetnotify audit digests"},
		{"            MaximumRetryAttempts: 10\n", "            MaximumRetryAttempts: 3\n"},
		{"  AllowedCountries:\n    Type: String\n    Default: \"US,CA\"\n", "  AllowedCountries:\n    Type: String\n    Default: \"GB,IE\"\n"},
	}
	edited := string(raw)
	for _, e := range edits {
		if strings.Count(edited, e.old) != 1 {
			t.Fatalf("template.yaml no longer has exactly one %q; update this test", e.old)
		}
		edited = strings.Replace(edited, e.old, e.new, 1)
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := loadSettings(path, makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	queues := map[string]map[string]string{}
	receives := map[string]int{}
	for _, q := range st.queues {
		queues[q.ID] = q.Attributes
		receives[q.ID] = q.MaxReceiveCount
	}
	type got struct {
		DispatchVisibility, DispatchRetention        string
		DispatchMaxReceives, IntakeMemory            int
		IntakeTimeout, DispatchTimeout, AuditTimeout time.Duration
		DispatchBatch, ReconcileBatch, AuditBatch    int
		AuditWindow, Sweep, Digest                   time.Duration
		AuditRetries, AuditReplayBatch               int
		AllowedCountries                             string
	}
	want := got{
		DispatchVisibility: "181", DispatchRetention: "86400", DispatchMaxReceives: 7, IntakeMemory: 384,
		IntakeTimeout: 11 * time.Second, DispatchTimeout: 29 * time.Second, AuditTimeout: 60 * time.Second,
		DispatchBatch: 4, ReconcileBatch: 10, AuditBatch: 50, AuditWindow: 2 * time.Second, Sweep: 5 * time.Minute,
		Digest: 2 * time.Minute, AuditRetries: 3, AuditReplayBatch: 1, AllowedCountries: "GB,IE",
	}
	have := got{
		DispatchVisibility: queues["DispatchQueue"]["VisibilityTimeout"], DispatchRetention: queues["DispatchQueue"]["MessageRetentionPeriod"],
		DispatchMaxReceives: receives["DispatchQueue"], IntakeMemory: st.functions["intake"].MemoryMB,
		IntakeTimeout: st.functions["intake"].Timeout, DispatchTimeout: st.functions["dispatch"].Timeout, AuditTimeout: st.functions["audit"].Timeout,
		DispatchBatch: st.dispatch.BatchSize, ReconcileBatch: st.reconcile.BatchSize, AuditBatch: st.audit.BatchSize,
		AuditWindow: st.audit.Window, Sweep: st.sweep.Every, Digest: st.digest.Every,
		AuditRetries: st.audit.MaxRetries, AuditReplayBatch: st.auditReplay.BatchSize,
		AllowedCountries: st.allowedCountries,
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("settings from the edited template (-want +got):\n%s", diff)
	}
	dirs, err := os.ReadDir("../../functions")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, ok := st.functions[d.Name()]; !ok {
			t.Errorf("functions/%s has no function in template.yaml (settings %v)", d.Name(), st.functions)
		}
	}
}

// TestQueuesMatchTemplate creates the local queues in moto and reads their attributes back:
// they are what template.yaml declares, redrive policies included.
func TestQueuesMatchTemplate(t *testing.T) {
	client := testenv.SQS(t)
	st, err := loadSettings(templatePath, makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	// Names of their own, so parallel packages sharing moto never collide.
	prefix := testenv.UniqueName(t, "local")
	saved := map[string]string{}
	for id, name := range queueNames {
		saved[id] = name
		queueNames[id] = prefix + "-" + name
	}
	t.Cleanup(func() {
		for id, name := range saved {
			queueNames[id] = name
		}
	})
	urls, err := createQueues(context.Background(), client, st.queues)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]string{
		"DispatchQueue": urls.Dispatch, "DispatchDLQ": urls.DispatchDLQ, "ReconcileQueue": urls.Reconcile,
		"ReconcileDLQ": urls.ReconcileDLQ, "AuditFailureQueue": urls.AuditFailure, "AuditReplayDLQ": urls.AuditReplayDLQ,
	}
	arns := map[string]string{}
	attrs := map[string]map[string]string{}
	for id, url := range byID {
		out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		attrs[id], arns[id] = out.Attributes, out.Attributes["QueueArn"]
	}
	if len(st.queues) != len(byID) {
		t.Fatalf("template has %d queues, infra/local creates %d", len(st.queues), len(byID))
	}
	for _, q := range st.queues {
		for k, v := range q.Attributes {
			if attrs[q.ID][k] != v {
				t.Errorf("%s %s = %q, template %q", q.ID, k, attrs[q.ID][k], v)
			}
		}
		var rp struct {
			Target string `json:"deadLetterTargetArn"`
			Max    any    `json:"maxReceiveCount"`
		}
		if q.DeadLetterQueue == "" {
			if attrs[q.ID]["RedrivePolicy"] != "" {
				t.Errorf("%s has a redrive policy the template does not declare", q.ID)
			}
			continue
		}
		if err := json.Unmarshal([]byte(attrs[q.ID]["RedrivePolicy"]), &rp); err != nil {
			t.Fatalf("%s RedrivePolicy %q: %v", q.ID, attrs[q.ID]["RedrivePolicy"], err)
		}
		if rp.Target != arns[q.DeadLetterQueue] || toString(rp.Max) != strconv.Itoa(q.MaxReceiveCount) {
			t.Errorf("%s redrive %+v, template %s after %d receives", q.ID, rp, q.DeadLetterQueue, q.MaxReceiveCount)
		}
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.Itoa(int(x))
	}
	return ""
}
