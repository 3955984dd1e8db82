package policycheck_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// TestOnlyIntakeSeals: the sealing key's policy denies GenerateDataKey* and Encrypt to every
// principal but the intake role: a record sealed by anyone else could carry any number past
// intake's guards, and dispatch opens whatever the key opens.
func TestOnlyIntakeSeals(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		if _, ok := tpl.Resources["SealingKey"]; !ok {
			return // an existing key: its policy is the owner's (docs/security.md says what it needs)
		}
		key := resourcePolicy(tpl, "SealingKey", "KeyPolicy")
		for _, a := range []string{"kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext", "kms:GenerateDataKeyPair", "kms:Encrypt"} {
			if !slices.ContainsFunc(key, func(s policycheck.Statement) bool {
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows(a) && len(s.Condition) == 1 && onlyPrincipals(s.Condition, "IntakeRole")
			}) {
				t.Errorf("the sealing key's policy does not deny %s to every principal but the intake role", a)
			}
		}
	})
}

// TestOnlyTheStackWritesWhatDispatchTrusts: the notifications and seal-keys tables' resource
// policies and the dispatch queue's policy deny every write to all principals but exactly the roles whose own
// policies grant that write (so a role that needs it is never locked out, and no other is
// let in) and DeploymentRoleArn when there is one.
func TestOnlyTheStackWritesWhatDispatchTrusts(t *testing.T) {
	tableWrites := []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
		"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete"}
	cases := []struct {
		resource string
		policy   func(policycheck.Template) []policycheck.Statement
		writes   []string
	}{
		{"SealKeysTable", func(tpl policycheck.Template) []policycheck.Statement {
			return resourcePolicy(tpl, "SealKeysTable", "ResourcePolicy", "PolicyDocument")
		}, tableWrites},
		{"NotificationsTable", func(tpl policycheck.Template) []policycheck.Statement {
			return resourcePolicy(tpl, "NotificationsTable", "ResourcePolicy", "PolicyDocument")
		}, tableWrites},
		{"DispatchQueue", func(tpl policycheck.Template) []policycheck.Statement { return queuePolicy(tpl, "DispatchQueue") },
			[]string{"sqs:SendMessage"}},
	}
	forEachDeployer(t, func(t *testing.T, tpl policycheck.Template, deployer string) {
		for _, c := range cases {
			want := writers(tpl, c.resource, c.writes)
			if len(want) == 0 {
				t.Fatalf("no role may write %s", c.resource)
			}
			if deployer != "" {
				want = append(want, "DeploymentRoleArn")
			}
			slices.Sort(want)
			stmts := c.policy(tpl)
			for _, a := range c.writes {
				if !slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
					return s.Effect == "Deny" && s.Principal == "*" && s.Allows(a) && len(s.Condition) == 1 &&
						slices.Equal(exempted(s.Condition), want)
				}) {
					t.Errorf("deployment role %q: %s's policy does not deny %s to every principal but %v", deployer, c.resource, a, want)
				}
			}
		}
	})
}

// writers returns the roles (sorted) whose policies allow any of actions on resource.
func writers(tpl policycheck.Template, resource string, actions []string) []string {
	var out []string
	for role, stmts := range policycheck.RolePolicies(tpl) {
		if slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
			return s.Effect == "Allow" && slices.ContainsFunc(actions, s.Allows) && slices.ContainsFunc(s.Resources, func(r any) bool {
				return policycheck.Ref(r) == resource || strings.Contains(policycheck.ResourceText(r), "${"+resource+".Arn}")
			})
		}) {
			out = append(out, role)
		}
	}
	slices.Sort(out)
	return out
}

// exempted returns, sorted, what an "ArnNotEquals aws:PrincipalArn" condition exempts: each
// role's logical ID (Fn::GetAtt Arn) and "DeploymentRoleArn" for a Ref of that parameter;
// nil when the condition is anything else.
func exempted(cond map[string]any) []string {
	arns, _ := cond["ArnNotEquals"].(map[string]any)
	if len(arns) != 1 {
		return nil
	}
	var out []string
	for _, v := range listOf(arns["aws:PrincipalArn"]) {
		name := policycheck.Ref(v)
		if name == "" {
			return nil
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// queuePolicy returns the statements of the AWS::SQS::QueuePolicy of the one queue named.
func queuePolicy(tpl policycheck.Template, queue string) []policycheck.Statement {
	var out []policycheck.Statement
	for _, r := range tpl.Resources {
		qs := listOf(r.Properties["Queues"])
		if r.Type == "AWS::SQS::QueuePolicy" && len(qs) == 1 && policycheck.Ref(qs[0]) == queue {
			out = append(out, policycheck.Statements("", r.Properties["PolicyDocument"])...)
		}
	}
	return out
}
