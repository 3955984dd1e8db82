package policycheck_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/policycheck"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/seal"
)

// variants are the stacks the template can make: each provider, and an existing sealing key.
var variants = map[string][]string{
	"endusersms":       {"SmsProviders=endusersms", "SmsOriginationIdentity=arn:aws:sms-voice:us-east-1:123456789012:pool/pool-0123", "SmsConfigurationSet=resetnotify"},
	"sinch":            {"SmsProviders=sinch", "SinchServicePlanId=plan0123", "SinchFrom=Shop"},
	"simulator":        {"SmsProviders=simulator", "SmsSimulatorUrl=https://sim.example"},
	"endusersms,sinch": {"SmsProviders=endusersms,sinch", "SmsOriginationIdentity=arn:aws:sms-voice:us-east-1:123456789012:pool/pool-0123", "SinchServicePlanId=plan0123", "SinchFrom=Shop"},
	"two simulators":   {"SmsProviders=simulator,simulator2", "SmsSimulatorUrl=https://sim.example", "SmsSimulator2Url=https://sim2.example"},
	"twilio":           {"SmsProviders=twilio", "TwilioAccountSid=AC0123456789abcdef0123456789abcdef", "TwilioFrom=+15005550006"},
	"endusersms,twilio": {"SmsProviders=endusersms,twilio", "SmsOriginationIdentity=arn:aws:sms-voice:us-east-1:123456789012:pool/pool-0123",
		"TwilioAccountSid=AC0123456789abcdef0123456789abcdef", "TwilioMessagingServiceSid=MG0123456789abcdef0123456789abcdef",
		"TwilioSecondaryAuthTokenParameter=/resetnotify/twilio-auth-token-next"},
	// The test chain of make e2e and make emulator-e2e: Twilio is the simulator in its Twilio
	// mode, its callbacks reach the API at the emulator's URL (CallbackBaseUrl).
	"test chain": {"SmsProviders=simulator,simulator2,twilio", "SmsSimulatorUrl=http://127.0.0.1:8001", "SmsSimulator2Url=http://127.0.0.1:8002",
		"TwilioBaseUrl=http://127.0.0.1:8003", "TwilioAccountSid=AC0123456789abcdef0123456789abcdef", "TwilioFrom=+15005550006",
		"CallbackBaseUrl=http://127.0.0.1:4566/_aws/execute-api/0a1b2c3d/$default"},
	"own key": {"SealingKeyArn=arn:aws:kms:us-east-1:123456789012:key/0123abcd-0000-0000-0000-000000000000"},
}

// starAllowed are the only actions an Allow may grant on Resource "*", and why.
var starAllowed = map[string]string{
	"xray:PutTraceSegments":    "X-Ray has no resource-level permissions (Tracing: Active)",
	"xray:PutTelemetryRecords": "X-Ray has no resource-level permissions (Tracing: Active)",
	// Intake's conversion feedback: the action names no resource type (a message ID is not
	// an ARN), and it cannot send; the role also denies every send action.
	"sms-voice:PutMessageFeedback": "End User Messaging SMS's feedback has no resource-level permissions",
	// Not here: cloudwatch:PutMetricData. Metrics are EMF lines in the logs, so no function
	// needs it.
}

// sendActions can each send an SMS (or have one sent); the reconcile role must deny them all.
var sendActions = []string{
	"sms-voice:SendTextMessage", "sms-voice:SendMediaMessage", "sms-voice:SendVoiceMessage",
	"sms-voice:SendDestinationNumberVerificationCode", "sns:Publish", "sns:PublishBatch",
	"mobiletargeting:SendMessages", "mobiletargeting:SendUsersMessages", "mobiletargeting:SendOTPMessage",
}

// functionRoles maps each function to the role that must be its own.
var functionRoles = map[string]string{
	"IntakeFunction": "IntakeRole", "DispatchFunction": "DispatchRole", "ReconcileFunction": "ReconcileRole",
	"SweeperFunction": "SweeperRole", "AuditFunction": "AuditRole", "ProviderEventsFunction": "ProviderEventsRole",
	"SimulatorWebhookFunction": "SimulatorWebhookRole", "SinchWebhookFunction": "SinchWebhookRole", "DigestFunction": "DigestRole",
	"TwilioWebhookFunction": "TwilioWebhookRole",
	"AuditReplayFunction":   "AuditReplayRole",
}

// expanded caches expansions by their parameters: each takes seconds.
var expanded sync.Map

// expand returns the template as SAM expands it for the variant's parameters. Without the
// virtualenv it skips, unless make test required the tools: then it fails.
func expand(t *testing.T, params ...string) policycheck.Template {
	t.Helper()
	cacheKey := strings.Join(params, " ")
	if tpl, ok := expanded.Load(cacheKey); ok {
		return tpl.(policycheck.Template)
	}
	tools, err := emulator.FindToolsDir()
	var python string
	if err == nil {
		python, err = policycheck.Interpreter(tools)
	}
	if err != nil {
		if os.Getenv(emulator.EnvEmulators) == emulator.EmulatorsRequired {
			t.Fatalf("make test needs aws-sam-translator: %v", err)
		}
		t.Skipf("template test: %v; run `make test`, which installs it", err)
	}
	root := filepath.Dir(tools)
	tpl, err := policycheck.Expand(python, filepath.Join(root, "infra", "expand-template.py"), filepath.Join(root, "template.yaml"), params...)
	if err != nil {
		t.Fatal(err)
	}
	expanded.Store(cacheKey, tpl)
	return tpl
}

func forEachVariant(t *testing.T, check func(t *testing.T, tpl policycheck.Template)) {
	for name, params := range variants {
		t.Run(name, func(t *testing.T) { check(t, expand(t, params...)) })
	}
}

func TestFunctionsHaveTheirOwnRoleAndNoManagedPolicy(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		seen := map[string]string{}
		for name, r := range tpl.Resources {
			switch r.Type {
			case "AWS::IAM::Role":
				if arns, ok := r.Properties["ManagedPolicyArns"]; ok {
					t.Errorf("%s has managed policies %v", name, arns)
				}
			case "AWS::Lambda::Function":
				role := policycheck.Ref(r.Properties["Role"])
				if want := functionRoles[name]; role != want {
					t.Errorf("%s runs as %q, want its own explicit role %q", name, role, want)
				}
				if other, dup := seen[role]; dup {
					t.Errorf("%s and %s share role %s", name, other, role)
				}
				seen[role] = name
				if tpl.Resources[role].Type != "AWS::IAM::Role" {
					t.Errorf("%s's role %s is not a role of the stack", name, role)
				}
			}
		}
		if len(seen) < 6 {
			t.Errorf("only %d functions found", len(seen))
		}
	})
}

func TestAllowsNameTheStacksResources(t *testing.T) {
	wide := regexp.MustCompile(`^arn:[^:]*:[^:]*:[^:]*:[^:]*:\*$|^\*$`)
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		for role, stmts := range policycheck.RolePolicies(tpl) {
			for _, s := range stmts {
				if s.Effect != "Allow" {
					continue
				}
				for _, a := range s.Actions {
					if strings.Contains(a, "*") {
						t.Errorf("%s %s allows the wildcard action %s", role, s.Sid, a)
					}
				}
				for _, r := range s.Resources {
					text := policycheck.ResourceText(r)
					if !wide.MatchString(text) {
						continue
					}
					for _, a := range s.Actions {
						if _, ok := starAllowed[a]; !ok {
							t.Errorf("%s %s allows %s on %s", role, s.Sid, a, text)
						}
					}
				}
			}
		}
	})
}

func TestReconcileCannotSend(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		stmts := policycheck.RolePolicies(tpl)["ReconcileRole"]
		for _, action := range sendActions {
			denied := slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
				return s.Effect == "Deny" && s.Allows(action) && slices.Contains(s.Resources, any("*"))
			})
			if !denied {
				t.Errorf("the reconcile role does not deny %s on every resource", action)
			}
			for _, s := range stmts {
				if s.Effect == "Allow" && s.Allows(action) {
					t.Errorf("the reconcile role allows %s (%s)", action, s.Sid)
				}
			}
		}
		if !slices.ContainsFunc(stmts, func(s policycheck.Statement) bool { return s.Effect == "Deny" && s.Allows("kms:Decrypt") }) {
			t.Error("the reconcile role does not deny kms:Decrypt of the sealing key")
		}
	})
}

// wantKMSCondition is what the template must require of every use of the sealing key: the
// encryption context shared/seal sends, and no other key.
func wantKMSCondition() map[string]any {
	ctx := seal.EncryptionContext()
	eq := map[string]any{}
	keys := []any{}
	for k, v := range ctx {
		eq["kms:EncryptionContext:"+k] = v
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	return map[string]any{"StringEquals": eq, "ForAllValues:StringEquals": map[string]any{"kms:EncryptionContextKeys": keys}}
}

func TestSealingKeyUseIsBoundToTheEncryptionContext(t *testing.T) {
	uses := map[string]string{"kms:Decrypt": "DispatchRole", "kms:GenerateDataKey": "IntakeRole"}
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		for role, stmts := range policycheck.RolePolicies(tpl) {
			for _, s := range stmts {
				if s.Effect != "Allow" || onlyResource(s, "AuditArchiveKey") {
					continue
				}
				for action, owner := range uses {
					if !s.Allows(action) && !s.Allows("kms:ReEncryptFrom") {
						continue
					}
					if role != owner {
						t.Errorf("%s may call %s (%s); only %s may", role, action, s.Sid, owner)
						continue
					}
					if d := cmp.Diff(wantKMSCondition(), s.Condition); d != "" {
						t.Errorf("%s %s: condition differs from the context shared/seal sends (-want +got):\n%s", role, s.Sid, d)
					}
				}
			}
		}
		key, ok := tpl.Resources["SealingKey"]
		if !ok {
			return // an existing key: its policy is the owner's (docs/security.md says what it needs)
		}
		deny := policycheck.Statements("", key.Properties["KeyPolicy"])
		if !slices.ContainsFunc(deny, func(s policycheck.Statement) bool {
			return s.Effect == "Deny" && s.Allows("kms:Decrypt") && s.Allows("kms:ReEncryptFrom") && s.Principal == "*" &&
				onlyPrincipals(s.Condition, "DispatchRole")
		}) {
			t.Error("the sealing key's policy does not deny Decrypt and ReEncrypt to every principal but the dispatch role's ARN")
		}
	})
}

// onlyPrincipals reports whether cond is exactly "aws:PrincipalArn is none of the ARNs of
// roles" (ArnNotEquals, each role's Fn::GetAtt Arn), plus the other conditions in also.
func onlyPrincipals(cond map[string]any, roles ...string) bool {
	arns, _ := cond["ArnNotEquals"].(map[string]any)
	if len(arns) != 1 {
		return false
	}
	var got []string
	for _, v := range listOf(arns["aws:PrincipalArn"]) {
		m, _ := v.(map[string]any)
		if att, _ := m["Fn::GetAtt"].([]any); len(att) != 2 || att[1] != "Arn" {
			return false
		}
		got = append(got, policycheck.Ref(v))
	}
	slices.Sort(got)
	want := slices.Clone(roles)
	slices.Sort(want)
	return slices.Equal(got, want)
}

func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

func TestSendsAreScopedToTheConfiguredIdentity(t *testing.T) {
	tpl := expand(t, variants["endusersms"]...)
	var resources []string
	for _, s := range policycheck.RolePolicies(tpl)["DispatchRole"] {
		if s.Effect == "Allow" && s.Allows("sms-voice:SendTextMessage") {
			for _, r := range s.Resources {
				resources = append(resources, policycheck.ResourceText(r))
			}
		}
	}
	want := []string{"${SmsOriginationIdentity}", "arn:${AWS::Partition}:sms-voice:${AWS::Region}:${AWS::AccountId}:configuration-set/${SmsConfigurationSet}", "arn:${AWS::Partition}:sms-voice:${AWS::Region}:${AWS::AccountId}:opt-out-list/*", `{"Fn::GetAtt":["SmsProtectConfiguration","Arn"]}`}
	if d := cmp.Diff(want, resources); d != "" {
		t.Errorf("SendTextMessage resources (-want +got):\n%s", d)
	}
}

// TestIAMFollowsTheChain resolves each stack's conditions (parameters as the variant sets
// them) and checks that the dispatch role may call exactly the providers of its chain: End
// User Messaging's send only with endusersms in it, the Sinch API token only with sinch in it
// (for dispatch and reconcile, which both call Sinch's API); and that the reconcile role
// still cannot send on any of them.
func TestIAMFollowsTheChain(t *testing.T) {
	for name, want := range map[string]struct{ eum, sinch, twilio bool }{
		"endusersms": {eum: true}, "sinch": {sinch: true}, "simulator": {}, "two simulators": {},
		"endusersms,sinch": {eum: true, sinch: true}, "twilio": {twilio: true}, "endusersms,twilio": {eum: true, twilio: true},
	} {
		t.Run(name, func(t *testing.T) {
			params := map[string]string{}
			for _, p := range variants[name] {
				k, v, _ := strings.Cut(p, "=")
				params[k] = v
			}
			tpl, err := policycheck.Resolved(expand(t, variants[name]...), params)
			if err != nil {
				t.Fatal(err)
			}
			roles := policycheck.RolePolicies(tpl)
			allows := func(role, action string) bool {
				return slices.ContainsFunc(roles[role], func(s policycheck.Statement) bool { return s.Effect == "Allow" && s.Allows(action) })
			}
			if got := allows("DispatchRole", "sms-voice:SendTextMessage"); got != want.eum {
				t.Errorf("dispatch may send through End User Messaging = %v, want %v", got, want.eum)
			}
			for _, role := range []string{"DispatchRole", "ReconcileRole"} {
				if got := allows(role, "ssm:GetParameter"); got != (want.sinch || want.twilio) {
					t.Errorf("%s may read a provider token = %v, want %v", role, got, want.sinch || want.twilio)
				}
			}
			// The callback token: dispatch puts it in every batch's callback URL; reconcile,
			// which asks Sinch for no report, never reads it.
			reads := func(role, param string) bool {
				return slices.ContainsFunc(roles[role], func(s policycheck.Statement) bool {
					return s.Effect == "Allow" && s.Allows("ssm:GetParameter") && strings.Contains(policycheck.ResourceText(s.Resources), param)
				})
			}
			if got := reads("DispatchRole", "SinchCallbackTokenParameter"); got != want.sinch {
				t.Errorf("dispatch may read the Sinch callback token = %v, want %v", got, want.sinch)
			}
			if reads("ReconcileRole", "SinchCallbackTokenParameter") {
				t.Error("reconcile may read the Sinch callback token")
			}
			// Twilio's auth token: dispatch and reconcile call Twilio's API with it.
			for _, role := range []string{"DispatchRole", "ReconcileRole"} {
				if got := reads(role, "TwilioAuthTokenParameter"); got != want.twilio {
					t.Errorf("%s may read the Twilio auth token = %v, want %v", role, got, want.twilio)
				}
			}
			for _, action := range sendActions {
				if allows("ReconcileRole", action) {
					t.Errorf("the reconcile role allows %s", action)
				}
			}
			_, protect := tpl.Resources["SmsProtectConfiguration"]
			if protect != want.eum {
				t.Errorf("End User Messaging's protect configuration exists = %v, want %v", protect, want.eum)
			}
		})
	}
}

// onlyResource reports whether every resource s names is the resource name (Ref or GetAtt).
func onlyResource(s policycheck.Statement, name string) bool {
	for _, r := range s.Resources {
		if policycheck.Ref(r) != name {
			return false
		}
	}
	return len(s.Resources) > 0
}

func TestAuditTableRefusesEdits(t *testing.T) {
	edits := []string{"dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete"}
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		table := tpl.Resources["AuditTable"]
		rp, _ := table.Properties["ResourcePolicy"].(map[string]any)
		stmts := policycheck.Statements("", rp["PolicyDocument"])
		for _, a := range edits {
			if !slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
				return s.Effect == "Deny" && s.Principal == "*" && s.Condition == nil && s.Allows(a)
			}) {
				t.Errorf("the audit table's resource policy does not deny %s to every principal", a)
			}
		}
		// The one update, of the TTL alone, by the archive step alone, never of a digest or an
		// archive item (shared/archive).
		if !slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
			return s.Effect == "Deny" && s.Principal == "*" && s.Allows("dynamodb:UpdateItem") && len(s.Condition) == 1 &&
				onlyPrincipals(s.Condition, "DigestRole")
		}) {
			t.Error("UpdateItem on the audit table is not denied to every principal but the digest role")
		}
		ttlOnly := `{"ForAnyValue:StringNotEquals":{"dynamodb:Attributes":["event_id","seq","drop_after"]}}`
		if !slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
			return s.Effect == "Deny" && s.Principal == "*" && s.Allows("dynamodb:UpdateItem") && policycheck.ResourceText(s.Condition) == ttlOnly
		}) {
			t.Error("the audit table's policy does not deny an UpdateItem that touches anything but drop_after")
		}
		if !slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
			return s.Effect == "Deny" && s.Principal == "*" && s.Allows("dynamodb:UpdateItem") && len(s.Condition) == 1 &&
				slices.Equal(leadingKeys(s.Condition, "ForAnyValue:StringEquals"), []any{"#digest", "#archive"})
		}) {
			t.Error("the audit table's policy does not deny updates of digests and archive items to everyone")
		}
		put := slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
			return s.Effect == "Deny" && s.Principal == "*" && s.Allows("dynamodb:PutItem") && len(s.Condition) == 1 &&
				onlyPrincipals(s.Condition, "AuditRole", "AuditReplayRole", "DigestRole")
		})
		if !put {
			t.Error("PutItem on the audit table is not limited to the audit writers' role ARNs")
		}
		if table.Properties["TimeToLiveSpecification"] == nil {
			t.Error("the audit table lost its TTL")
		}
		auditor := policycheck.RolePolicies(tpl)["AuditorRole"]
		for _, a := range []string{"dynamodb:UpdateContinuousBackups", "dynamodb:UpdateTable", "dynamodb:DeleteTable", "dynamodb:DeleteResourcePolicy", "dynamodb:PutItem", "dynamodb:UpdateItem"} {
			if !slices.ContainsFunc(auditor, func(s policycheck.Statement) bool { return s.Effect == "Deny" && s.Allows(a) }) {
				t.Errorf("AuditorRole does not deny %s", a)
			}
		}
	})
}

func TestSimulatorWebhookOnlyInSimulatorStacks(t *testing.T) {
	tpl := expand(t, variants["simulator"]...)
	if c := policycheck.ResourceText(tpl.Conditions["UseSimulator"]); !strings.Contains(c, `{"Fn::Equals":[{"Ref":"SmsProviders"},"simulator"]}`) {
		t.Errorf("UseSimulator = %s", c)
	}
	for name, r := range tpl.Resources {
		if strings.HasPrefix(name, "SimulatorWebhook") && r.Condition != "UseSimulator" {
			t.Errorf("%s exists in every stack (condition %q)", name, r.Condition)
		}
	}
	routes := 0
	for name, r := range tpl.Resources {
		if r.Type == "AWS::ApiGatewayV2::Route" && r.Properties["RouteKey"] == "POST /v1/provider-events/simulator" {
			routes++
			if r.Condition != "UseSimulator" {
				t.Errorf("the simulator route %s is not conditional on UseSimulator (condition %q)", name, r.Condition)
			}
		}
	}
	if routes != 1 {
		t.Errorf("%d routes for the simulator's webhook, want 1", routes)
	}
}

// TestSinchWebhookOnlyWithSinch: Sinch's delivery report route, its function, role and log
// group exist exactly in the stacks whose chain holds sinch; its token is an SSM SecureString
// that the function reads once at cold start, as the simulator's is, never an environment
// variable; and dispatch is given the route's URL (without the token) only there.
func TestSinchWebhookOnlyWithSinch(t *testing.T) {
	for name, want := range map[string]bool{"sinch": true, "endusersms,sinch": true, "endusersms": false, "simulator": false, "two simulators": false} {
		t.Run(name, func(t *testing.T) {
			params := map[string]string{}
			for _, p := range variants[name] {
				k, v, _ := strings.Cut(p, "=")
				params[k] = v
			}
			tpl, err := policycheck.Resolved(expand(t, variants[name]...), params)
			if err != nil {
				t.Fatal(err)
			}
			routes := 0
			for rn, r := range tpl.Resources {
				if r.Type == "AWS::ApiGatewayV2::Route" && r.Properties["RouteKey"] == "POST /v1/provider-events/sinch" {
					routes++
					if r.Properties["AuthorizationType"] != "NONE" {
						t.Errorf("%s: authorisation %v, want NONE (Sinch cannot sign with SigV4)", rn, r.Properties["AuthorizationType"])
					}
				}
			}
			if want != (routes == 1) || routes > 1 {
				t.Errorf("%d routes for Sinch's webhook, want one: %v", routes, want)
			}
			for _, res := range []string{"SinchWebhookFunction", "SinchWebhookRole", "SinchWebhookLogs", "SinchWebhookApiPermission"} {
				if _, ok := tpl.Resources[res]; ok != want {
					t.Errorf("%s exists = %v, want %v", res, ok, want)
				}
			}
			dispatchEnv := envOf(tpl, "DispatchFunction")
			if got := policycheck.ResourceText(dispatchEnv["SINCH_CALLBACK_URL"]); strings.Contains(got, "/v1/provider-events/sinch") != want || strings.Contains(got, "token") {
				t.Errorf("dispatch's SINCH_CALLBACK_URL = %s, want the route (and no token) only with sinch", got)
			}
			if !want {
				return
			}
			env := envOf(tpl, "SinchWebhookFunction")
			if policycheck.Ref(env[config.EnvSinchCallbackTokenParam]) != "SinchCallbackTokenParameter" || env[config.EnvSinchCallbackToken] != nil {
				t.Errorf("the Sinch webhook's token comes from %v / %v, want the SSM parameter SinchCallbackTokenParameter only", env[config.EnvSinchCallbackTokenParam], env[config.EnvSinchCallbackToken])
			}
			if policycheck.Ref(dispatchEnv[config.EnvSinchCallbackTokenParam]) != "SinchCallbackTokenParameter" {
				t.Errorf("dispatch reads the callback token from %v, want SinchCallbackTokenParameter", dispatchEnv[config.EnvSinchCallbackTokenParam])
			}
			role := policycheck.RolePolicies(tpl)["SinchWebhookRole"]
			if !slices.ContainsFunc(role, func(s policycheck.Statement) bool {
				return s.Effect == "Allow" && s.Allows("ssm:GetParameter") && strings.Contains(policycheck.ResourceText(s.Resources), "SinchCallbackTokenParameter")
			}) {
				t.Error("SinchWebhookRole may not read its token")
			}
			// During a rotation the webhook reads the token being retired too; it alone does.
			if policycheck.Ref(env[config.EnvSinchCallbackTokenPreviousParam]) != "SinchPreviousCallbackTokenParameter" || env[config.EnvSinchCallbackTokenPrevious] != nil {
				t.Errorf("the Sinch webhook's previous token comes from %v, want the SSM parameter SinchPreviousCallbackTokenParameter", env[config.EnvSinchCallbackTokenPreviousParam])
			}
			if dispatchEnv[config.EnvSinchCallbackTokenPreviousParam] != nil {
				t.Error("dispatch reads the previous callback token: it must give Sinch the current one only")
			}
			for rotating, want := range map[string]bool{"": false, "/resetnotify/sinch-callback-token-old": true} {
				rp := maps.Clone(params)
				rp["SinchPreviousCallbackTokenParameter"] = rotating
				rtpl, err := policycheck.Resolved(expand(t, variants[name]...), rp)
				if err != nil {
					t.Fatal(err)
				}
				reads := slices.ContainsFunc(policycheck.RolePolicies(rtpl)["SinchWebhookRole"], func(s policycheck.Statement) bool {
					return s.Effect == "Allow" && s.Allows("ssm:GetParameter") && strings.Contains(policycheck.ResourceText(s.Resources), "SinchPreviousCallbackTokenParameter")
				})
				if reads != want {
					t.Errorf("previous token %q: SinchWebhookRole may read it = %v, want %v", rotating, reads, want)
				}
			}
			for _, s := range role {
				if s.Effect == "Allow" && s.Allows("ssm:GetParameter") && strings.Contains(policycheck.ResourceText(s.Resources), "SinchApiTokenParameter") {
					t.Error("SinchWebhookRole may read the Sinch API token, with which it could send")
				}
			}
		})
	}
}

// TestTwilioWebhookOnlyWithTwilio: Twilio's status callback route, its function, role and log
// group exist exactly in the stacks whose chain holds twilio, without SigV4 (Twilio signs with
// its auth token instead); the auth token is read from SSM, never an environment variable; the
// only roles that may read it are dispatch's, reconcile's and the callback function's (the
// secondary token the callback function's alone, and only while one is named); and dispatch
// is given the route's URL only there.
func TestTwilioWebhookOnlyWithTwilio(t *testing.T) {
	for name, want := range map[string]bool{"twilio": true, "endusersms,twilio": true, "test chain": true, "endusersms": false, "sinch": false, "two simulators": false} {
		t.Run(name, func(t *testing.T) {
			params := map[string]string{}
			for _, p := range variants[name] {
				k, v, _ := strings.Cut(p, "=")
				params[k] = v
			}
			tpl, err := policycheck.Resolved(expand(t, variants[name]...), params)
			if err != nil {
				t.Fatal(err)
			}
			routes := 0
			for rn, r := range tpl.Resources {
				if r.Type == "AWS::ApiGatewayV2::Route" && r.Properties["RouteKey"] == "POST /v1/provider-events/twilio" {
					routes++
					if r.Properties["AuthorizationType"] != "NONE" {
						t.Errorf("%s: authorisation %v, want NONE (Twilio cannot sign with SigV4)", rn, r.Properties["AuthorizationType"])
					}
				}
			}
			if want != (routes == 1) || routes > 1 {
				t.Errorf("%d routes for Twilio's status callbacks, want one: %v", routes, want)
			}
			for _, res := range []string{"TwilioWebhookFunction", "TwilioWebhookRole", "TwilioWebhookLogs", "TwilioWebhookApiPermission"} {
				if _, ok := tpl.Resources[res]; ok != want {
					t.Errorf("%s exists = %v, want %v", res, ok, want)
				}
			}
			dispatchEnv := envOf(tpl, "DispatchFunction")
			if got := policycheck.ResourceText(dispatchEnv[config.EnvTwilioCallbackURL]); strings.Contains(got, "/v1/provider-events/twilio") != want {
				t.Errorf("dispatch's TWILIO_CALLBACK_URL = %s, want the route only with twilio", got)
			}
			readers := map[string]bool{}
			for role, stmts := range policycheck.RolePolicies(tpl) {
				for _, s := range stmts {
					if s.Effect == "Allow" && s.Allows("ssm:GetParameter") && strings.Contains(policycheck.ResourceText(s.Resources), "TwilioAuthTokenParameter") {
						readers[role] = true
					}
					if s.Effect == "Allow" && s.Allows("ssm:GetParameter") && strings.Contains(policycheck.ResourceText(s.Resources), "TwilioSecondaryAuthTokenParameter") && role != "TwilioWebhookRole" {
						t.Errorf("%s may read the secondary Twilio token", role)
					}
				}
			}
			wantReaders := map[string]bool{}
			if want {
				wantReaders = map[string]bool{"DispatchRole": true, "ReconcileRole": true, "TwilioWebhookRole": true}
			}
			if !maps.Equal(readers, wantReaders) {
				t.Errorf("roles that may read the Twilio auth token: %v, want %v", readers, wantReaders)
			}
			if !want {
				return
			}
			env := envOf(tpl, "TwilioWebhookFunction")
			if policycheck.Ref(env[config.EnvTwilioAuthTokenParam]) != "TwilioAuthTokenParameter" || env[config.EnvTwilioAuthToken] != nil || env[config.EnvTwilioSecondaryAuthToken] != nil {
				t.Errorf("the Twilio webhook's token comes from %v, want the SSM parameter TwilioAuthTokenParameter only", env[config.EnvTwilioAuthTokenParam])
			}
			if got := policycheck.ResourceText(env[config.EnvTwilioCallbackURL]); !strings.Contains(got, "/v1/provider-events/twilio") {
				t.Errorf("the Twilio webhook checks signatures against %s, want the route", got)
			}
		})
	}
}

func TestNoSecretInAnEnvironmentVariable(t *testing.T) {
	secrets := []string{config.EnvSealLocalKey, config.EnvDestinationPepper, config.EnvFingerprintKey, config.EnvSimulatorWebhookToken, "SINCH_API_TOKEN", "SMS_SIMULATOR_TOKEN", config.EnvSinchCallbackToken, config.EnvSinchCallbackTokenPrevious,
		config.EnvTwilioAuthToken, config.EnvTwilioSecondaryAuthToken}
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		for name, r := range tpl.Resources {
			if r.Type != "AWS::Lambda::Function" {
				continue
			}
			env, _ := r.Properties["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			for _, s := range secrets {
				if _, ok := vars[s]; ok {
					t.Errorf("%s sets the secret %s as an environment variable", name, s)
				}
			}
		}
	})
}
