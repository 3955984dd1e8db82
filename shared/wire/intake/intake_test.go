package intake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
	"github.com/resetnotify/resetnotify/shared/wire"
	intakewire "github.com/resetnotify/resetnotify/shared/wire/intake"
	"github.com/resetnotify/resetnotify/shared/wire/wiretest"
)

func TestBuildRefusesIncompleteConfig(t *testing.T) {
	for _, name := range []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvSealKMSKeyID,
		config.EnvSealLocalKey, config.EnvDestinationPepper, config.EnvDestinationPepperParam} {
		t.Setenv(name, "")
	}
	for k, v := range wiretest.Lambda {
		t.Setenv(k, v)
	}
	_, err := wire.Build(t.Context(), intakewire.Function, os.Getenv, io.Discard)
	if err == nil {
		t.Fatal("built without configuration")
	}
	for _, name := range []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvDestinationPepper} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

// TestBuildRefusesUnknownCountries: ALLOWED_COUNTRIES is checked against the phone-number
// metadata when intake starts; a country it does not know stops the start, naming the variable.
func TestBuildRefusesUnknownCountries(t *testing.T) {
	env := map[string]string{
		config.EnvNotificationsTable: "n", config.EnvDispatchQueueURL: "http://127.0.0.1:1/q",
		config.EnvSealLocalKey:      "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		config.EnvDestinationPepper: "wiring-test-pepper-0123", config.EnvFingerprintKey: "wiring-test-fingerprint-key-0123456789",
		config.EnvGuardTable: config.Off, config.EnvConversionTable: config.Off,
	}
	for list, ok := range map[string]bool{"US,CA": true, "US,AA": false, "UK": false, "ZZ": false} {
		env[config.EnvAllowedCountries] = list
		_, err := wire.Build(t.Context(), intakewire.Function, wiretest.Env(env), io.Discard)
		if ok && err != nil {
			t.Errorf("%s: %v", list, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), config.EnvAllowedCountries)) {
			t.Errorf("%s: error %v does not name %s", list, err, config.EnvAllowedCountries)
		}
	}
}

// TestServiceOwnsKeys: the wired intake makes callers own their keys, with the operator that
// OPERATOR_PRINCIPAL_ARN names (a session's role, in canonical form); a value that names no
// principal stops the start, naming the variable.
func TestServiceOwnsKeys(t *testing.T) {
	env := map[string]string{
		config.EnvNotificationsTable: "n", config.EnvDispatchQueueURL: "http://127.0.0.1:1/q",
		config.EnvSealLocalKey:      "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		config.EnvDestinationPepper: "wiring-test-pepper-0123", config.EnvFingerprintKey: "wiring-test-fingerprint-key-0123456789",
		config.EnvOperatorPrincipalARN: "arn:aws:iam::123456789012:role/ops/support",
		config.EnvGuardTable:           config.Off, config.EnvAllowedCountries: config.Off,
		config.EnvConversionTable: config.Off,
	}
	cfg, err := config.Load(func(k string) string { return env[k] }, config.NeedIntake)
	if err != nil {
		t.Fatal(err)
	}
	in, err := intakewire.Service(t.Context(), cfg, aws.Config{Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	if in.Owners == nil || in.Operator != "arn:aws:iam::123456789012:role/support" {
		t.Errorf("owners %v, operator %q: want owned keys and the support role", in.Owners, in.Operator)
	}
	env[config.EnvOperatorPrincipalARN] = "support"
	if _, err := wire.Build(t.Context(), intakewire.Function, wiretest.Env(env), io.Discard); err == nil ||
		!strings.Contains(err.Error(), config.EnvOperatorPrincipalARN) {
		t.Errorf("an operator that is no ARN: %v, want an error naming %s", err, config.EnvOperatorPrincipalARN)
	}
}

// TestWiring runs the handler that the intake function builds against DynamoDB Local and
// moto, reached through the standard AWS_ENDPOINT_URL_* variables that `make test` sets, as a
// local run reaches them.
func TestWiring(t *testing.T) {
	ddb := testenv.DynamoDB(t)
	sqsClient := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit"), Guard: testenv.UniqueName(t, "guard")}
	createTables(ctx, t, ddb, names)
	queueURL := testenv.Queue(t, sqsClient, testenv.UniqueName(t, "dispatch"))

	env := map[string]string{
		config.EnvNotificationsTable: names.Notifications,
		config.EnvDispatchQueueURL:   queueURL,
		config.EnvSealLocalKey:       "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		config.EnvDestinationPepper:  "wiring-test-pepper-0123",
		config.EnvFingerprintKey:     "wiring-test-fingerprint-key-0123456789",
		config.EnvAllowedCountries:   "US,CA",
		config.EnvGuardTable:         names.Guard,
		config.EnvConversionTable:    config.Off,
	}
	var out bytes.Buffer
	h, err := wire.Build(ctx, intakewire.Function, wiretest.Env(env), &out)
	if err != nil {
		t.Fatalf("build: %v", err)
	}

	// The allow-list, placed by the phone-number metadata: +1 876 is Jamaica, not the US.
	resp, err := h.Handle(ctx, submitEvent(t, "wiring-jm", "+18765550100"))
	if err != nil || resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(resp.Body, "destination-not-allowed") {
		t.Fatalf("POST to JM: %d %s (%v), want 422 destination-not-allowed", resp.StatusCode, resp.Body, err)
	}
	resp, err = h.Handle(ctx, submitEvent(t, "wiring-1", wiringNumber))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d %s (%v)\n%s", resp.StatusCode, resp.Body, err, out.String())
	}
	var view intake.StatusView
	if err := json.Unmarshal([]byte(resp.Body), &view); err != nil {
		t.Fatal(err)
	}
	if len(view.NotificationID) != 26 || view.State != notify.StateAccepted {
		t.Errorf("view = %+v, want a ULID and accepted", view)
	}

	// The message names the stored key: the caller's key scoped to its owner.
	checkQueued(ctx, t, sqsClient, queueURL, notify.Message{IdempotencyKey: storedKey(t, "wiring-1"), NotificationID: view.NotificationID, Version: 1})
	// The stored fingerprint is the keyed one: the wiring gives intake the fingerprint key.
	item, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(names.Notifications),
		Key: map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: storedKey(t, "wiring-1")}}})
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := item.Item[tables.AttrRequestFingerprint].(*ddbtypes.AttributeValueMemberS); fp == nil || !strings.HasPrefix(fp.Value, seal.RequestFPPrefix) {
		t.Errorf("stored fingerprint %v is not keyed", item.Item[tables.AttrRequestFingerprint])
	}
	// The owner is a keyed fingerprint of the caller's role, 22 characters, never its ARN.
	if own, _ := item.Item[tables.AttrOwner].(*ddbtypes.AttributeValueMemberS); own == nil || len(own.Value) != 22 || strings.Contains(own.Value, "arn:") {
		t.Errorf("stored owner %v, want a 22-character fingerprint", item.Item[tables.AttrOwner])
	}
	for _, secret := range []string{wiringNumber, wiringNumber[1:], "18765550100", "K7Q2M9", "wiring-test-pepper", "MDEyMzQ1", "wiring-test-fingerprint-key"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("function output holds %q:\n%s", secret, out.String())
		}
	}
}

// createTables creates the tables names for t, and deletes them when t ends.
func createTables(ctx context.Context, t *testing.T, ddb *dynamodb.Client, names tables.Names) {
	t.Helper()
	if err := tablesetup.Create(ctx, ddb, names); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range []string{names.Notifications, names.Audit, names.Guard} {
			_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
}

// wiringNumber is a number in New York, which ALLOWED_COUNTRIES=US,CA admits.
const wiringNumber = "+12125550123"

// submitEvent is the HTTP API's event for a POST of a valid notification to to, under key.
func submitEvent(t *testing.T, key, to string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"event_id": "evt-" + key, "channel": "sms", "purpose": "one_time_code", "to": to,
		"params": map[string]string{"code": "K7Q2M9"}, "expires_at": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339),
	})
	if err != nil {
		t.Fatal(err)
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: intake.RouteSubmit, RawPath: intake.CollectionPath,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key},
		Body:    string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "wiring-req-1", RouteKey: intake.RouteSubmit, Authorizer: localapi.Caller(localapi.LocalCallerRole), Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: intake.CollectionPath},
		},
	}
}

// checkQueued checks that the queue holds exactly the message want.
func checkQueued(ctx context.Context, t *testing.T, client *sqs.Client, queueURL string, want notify.Message) {
	t.Helper()
	msgs, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs.Messages) != 1 {
		t.Fatalf("queue holds %d messages, want 1", len(msgs.Messages))
	}
	var got notify.Message
	if err := json.Unmarshal([]byte(aws.ToString(msgs.Messages[0].Body)), &got); err != nil || got != want {
		t.Errorf("message %s, want %+v", aws.ToString(msgs.Messages[0].Body), want)
	}
}
