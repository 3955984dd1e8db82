package policycheck_test

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// aliasName is every function's AutoPublishAlias (template.yaml's Globals).
const aliasName = "live"

// thePages are the only rollback alarms of a gradual deploy: the objectives' pages.
var thePages = []string{"AdmissionPage", "DeliveryPage"}

// apiFunctions are behind API routes, where each request is routed on its own: a canary.
var apiFunctions = []string{"IntakeFunction", "SimulatorWebhookFunction", "SinchWebhookFunction", "TwilioWebhookFunction"}

// subRef matches a ${LogicalId} or ${LogicalId.Attribute} of an Fn::Sub string, and the
// qualifier after an ARN (${Function.Arn}:live, the alias's ARN).
var subRef = regexp.MustCompile(`\$\{([A-Za-z0-9]+)(\.[A-Za-z]+)?\}(:[A-Za-z0-9_-]+)?`)

// target is what a trigger names: a resource, or the alias of a function by its ARN.
type target struct {
	id        string
	qualifier string
}

// invokeTargets lists what v names (Ref, Fn::GetAtt, Fn::Sub), at any depth.
func invokeTargets(v any) []target {
	var out []target
	switch x := v.(type) {
	case map[string]any:
		if id := policycheck.Ref(x); id != "" {
			return []target{{id: id}}
		}
		if sub, ok := x["Fn::Sub"]; ok {
			text := sub
			if l, ok := sub.([]any); ok && len(l) > 0 {
				text = l[0]
			}
			if s, ok := text.(string); ok {
				for _, m := range subRef.FindAllStringSubmatch(s, -1) {
					out = append(out, target{id: m[1], qualifier: strings.TrimPrefix(m[3], ":")})
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, invokeTargets(x[k])...)
		}
	case []any:
		for _, e := range x {
			out = append(out, invokeTargets(e)...)
		}
	}
	return out
}

// triggerTargets are, per resource type that invokes a function, the properties naming what
// it invokes.
var triggerTargets = map[string][]string{
	"AWS::Lambda::EventSourceMapping":   {"FunctionName"},
	"AWS::Lambda::Permission":           {"FunctionName"},
	"AWS::Lambda::Url":                  {"TargetFunctionArn"},
	"AWS::SNS::Subscription":            {"Endpoint"},
	"AWS::Events::Rule":                 {"Targets"},
	"AWS::Scheduler::Schedule":          {"Target"},
	"AWS::ApiGatewayV2::Integration":    {"IntegrationUri"},
	"AWS::Lambda::EventInvokeConfig":    {"Qualifier"},
	"AWS::Lambda::EventSourceMappingV2": {"FunctionName"},
}

// TestEveryTriggerInvokesTheAlias: a route, queue, stream, schedule, topic subscription or
// invoke permission that names a function itself (its $LATEST) would bypass the alias a
// gradual deploy shifts, so the old and new code would both take traffic with no alarm able
// to stop it. Every such resource of the expanded stack must name a function's alias.
func TestEveryTriggerInvokesTheAlias(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tpl policycheck.Template, _ bool) {
		raw, _ := json.Marshal(tpl.Resources)
		if strings.Contains(string(raw), "$LATEST") {
			t.Error("the expanded stack names $LATEST")
		}
		triggers := 0
		for _, name := range slices.Sorted(maps.Keys(tpl.Resources)) {
			r := tpl.Resources[name]
			props, ok := triggerTargets[r.Type]
			if !ok {
				continue
			}
			for _, p := range props {
				if r.Type == "AWS::Lambda::EventInvokeConfig" {
					if r.Properties[p] != aliasName {
						t.Errorf("%s configures %v, not the alias %q", name, r.Properties[p], aliasName)
					}
					continue
				}
				for _, to := range invokeTargets(r.Properties[p]) {
					switch tpl.Resources[to.id].Type {
					case "AWS::Lambda::Function":
						if to.qualifier != aliasName {
							t.Errorf("%s's %s names the function %s, not its alias", name, p, to.id)
							continue
						}
						triggers++
					case "AWS::Lambda::Alias":
						triggers++
					}
				}
			}
		}
		if triggers < 10 {
			t.Errorf("only %d triggers name an alias: has the template's shape changed?", triggers)
		}
	})
}

// TestEveryFunctionShiftsGradually: each function has its alias on a published version, and,
// on AWS, a CodeDeploy deployment group that shifts it (a canary for the API's functions)
// and rolls back when a page fires; on an emulator (no CodeDeploy) the alias and version stay
// and nothing of CodeDeploy is in the stack.
func TestEveryFunctionShiftsGradually(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tpl policycheck.Template, onAWS bool) {
		aliases, groups := map[string]string{}, map[string]policycheck.Resource{}
		for name, r := range tpl.Resources {
			switch r.Type {
			case "AWS::Lambda::Alias":
				fn := policycheck.Ref(r.Properties["FunctionName"])
				version := policycheck.Ref(r.Properties["FunctionVersion"])
				if r.Properties["Name"] != aliasName || tpl.Resources[version].Type != "AWS::Lambda::Version" ||
					policycheck.Ref(tpl.Resources[version].Properties["FunctionName"]) != fn {
					t.Errorf("%s is not the alias %q of a version of %s", name, aliasName, fn)
				}
				aliases[fn] = name
			case "AWS::CodeDeploy::DeploymentGroup":
				groups[name] = r
			}
		}
		if !onAWS && len(groups) > 0 {
			t.Errorf("the emulator's stack has deployment groups %v", slices.Sorted(maps.Keys(groups)))
		}
		for name, r := range tpl.Resources {
			if r.Type != "AWS::Lambda::Function" {
				continue
			}
			alias, ok := aliases[name]
			if !ok {
				t.Errorf("%s has no alias", name)
				continue
			}
			update := tpl.Resources[alias].UpdatePolicy["CodeDeployLambdaAliasUpdate"]
			if !onAWS {
				if update != nil {
					t.Errorf("%s's alias is shifted by CodeDeploy on the emulator", name)
				}
				continue
			}
			group := policycheck.Ref(mapOf(update)["DeploymentGroupName"])
			if group == "" {
				t.Errorf("%s has no deployment preference", name)
				continue
			}
			checkGroup(t, name, groups[group])
		}
	})
}

// checkGroup checks the deployment group that shifts fn's alias.
func checkGroup(t *testing.T, fn string, g policycheck.Resource) {
	t.Helper()
	alarms := mapOf(g.Properties["AlarmConfiguration"])
	var names []string
	for _, a := range list(alarms["Alarms"]) {
		names = append(names, policycheck.Ref(mapOf(a)["Name"]))
	}
	slices.Sort(names)
	if alarms["Enabled"] != true || !slices.Equal(names, thePages) {
		t.Errorf("%s's deployment watches %v (enabled %v), want the pages %v", fn, names, alarms["Enabled"], thePages)
	}
	if !slices.Contains(list(mapOf(g.Properties["AutoRollbackConfiguration"])["Events"]), any("DEPLOYMENT_STOP_ON_ALARM")) {
		t.Errorf("%s's deployment does not roll back on an alarm", fn)
	}
	raw, _ := json.Marshal(g.Properties["DeploymentConfigName"])
	if slices.Contains(apiFunctions, fn) && !strings.Contains(string(raw), "Canary") {
		t.Errorf("%s serves the API but deploys as %s, not a canary", fn, raw)
	}
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// forEachTarget runs check on the test chain's stack for AWS and for an emulator.
func forEachTarget(t *testing.T, check func(t *testing.T, tpl policycheck.Template, onAWS bool)) {
	for _, target := range []string{"aws", "emulator"} {
		t.Run(target, func(t *testing.T) {
			check(t, expand(t, append([]string{"Target=" + target}, variants["test chain"]...)...), target == "aws")
		})
	}
}
