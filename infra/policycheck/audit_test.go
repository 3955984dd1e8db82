package policycheck_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// resourcePolicy returns the statements of the policy document at path (property names) of
// the resource named name.
func resourcePolicy(tpl policycheck.Template, name string, path ...string) []policycheck.Statement {
	var v any = tpl.Resources[name].Properties
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return policycheck.Statements("", v)
}

// leadingKeys returns the dynamodb:LeadingKeys values cond compares with op.
func leadingKeys(cond map[string]any, op string) []any {
	m, _ := cond[op].(map[string]any)
	return listOf(m["dynamodb:LeadingKeys"])
}

func TestOnlyTheDigestRoleSigns(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		key := resourcePolicy(tpl, "DigestSigningKey", "KeyPolicy")
		if !slices.ContainsFunc(key, func(s policycheck.Statement) bool {
			return s.Effect == "Deny" && s.Principal == "*" && s.Allows("kms:Sign") && len(s.Condition) == 1 &&
				onlyPrincipals(s.Condition, "DigestRole")
		}) {
			t.Error("the digest key's policy does not deny kms:Sign to every principal but the digest role's ARN")
		}
		for _, s := range key {
			if s.Effect != "Allow" || !s.Allows("kms:Sign") {
				continue
			}
			p, _ := s.Principal.(map[string]any)
			if policycheck.Ref(p["AWS"]) != "DigestRole" && s.Sid != "AccountAdministration" {
				t.Errorf("the digest key's policy lets %s sign (%s)", policycheck.ResourceText(s.Principal), s.Sid)
			}
		}
		for role, stmts := range policycheck.RolePolicies(tpl) {
			for _, s := range stmts {
				if s.Effect == "Allow" && s.Allows("kms:Sign") {
					t.Errorf("%s's own policy allows kms:Sign (%s): the key's policy alone grants it", role, s.Sid)
				}
			}
		}
	})
}

func TestOnlyTheDigestRoleWritesDigests(t *testing.T) {
	writes := []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		table := resourcePolicy(tpl, "AuditTable", "ResourcePolicy", "PolicyDocument")
		for _, a := range writes {
			if !slices.ContainsFunc(table, func(s policycheck.Statement) bool {
				others := map[string]any{"ArnNotEquals": s.Condition["ArnNotEquals"]}
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows(a) && len(s.Condition) == 2 &&
					slices.Equal(leadingKeys(s.Condition, "ForAnyValue:StringEquals"), []any{"#digest"}) &&
					onlyPrincipals(others, "DigestRole")
			}) {
				t.Errorf("the audit table's policy does not deny %s on %q to all but the digest role", a, "#digest")
			}
		}
		roles := policycheck.RolePolicies(tpl)
		for _, role := range []string{"AuditRole", "AuditReplayRole"} {
			for _, a := range writes {
				if !slices.ContainsFunc(roles[role], func(s policycheck.Statement) bool {
					return s.Effect == "Deny" && s.Allows(a) &&
						slices.Equal(leadingKeys(s.Condition, "ForAnyValue:StringEquals"), []any{"#digest"})
				}) {
					t.Errorf("%s does not deny itself %s on %q", role, a, "#digest")
				}
			}
		}
		for _, s := range roles["DigestRole"] {
			if s.Effect == "Allow" && s.Allows("dynamodb:PutItem") &&
				!slices.Equal(leadingKeys(s.Condition, "ForAllValues:StringEquals"), []any{"#digest", "#archive"}) {
				t.Errorf("the digest role may put outside %q and %q (%s)", "#digest", "#archive", s.Sid)
			}
		}
	})
}

// TestAuditTableProtectionsStay: the table's policy, point-in-time recovery and the table
// itself (UpdateTable: its KMS key, deletion protection) are denied to every principal but
// this stack's deployment role (DeploymentRoleArn), and to every principal when there is none;
// no exemption rests on aws:CalledVia, which every CloudFormation stack's calls carry.
func TestAuditTableProtectionsStay(t *testing.T) {
	protected := []string{"dynamodb:PutResourcePolicy", "dynamodb:DeleteResourcePolicy", "dynamodb:UpdateContinuousBackups", "dynamodb:UpdateTable"}
	deployer := "arn:aws:iam::123456789012:role/resetnotify-deploy"
	forEachVariant(t, func(t *testing.T, expanded policycheck.Template) {
		for _, role := range []string{"", deployer} {
			tpl, err := policycheck.Resolved(expanded, map[string]string{"DeploymentRoleArn": role})
			if err != nil {
				t.Fatal(err)
			}
			table := resourcePolicy(tpl, "AuditTable", "ResourcePolicy", "PolicyDocument")
			for _, a := range protected {
				if !slices.ContainsFunc(table, func(s policycheck.Statement) bool {
					if s.Effect != "Deny" || s.Principal != "*" || !s.Allows(a) {
						return false
					}
					if role == "" {
						return s.Condition == nil
					}
					arns, _ := s.Condition["ArnNotEquals"].(map[string]any)
					return len(s.Condition) == 1 && len(arns) == 1 && policycheck.Ref(arns["aws:PrincipalArn"]) == "DeploymentRoleArn"
				}) {
					t.Errorf("deployment role %q: the audit table's policy does not deny %s to every principal but it", role, a)
				}
			}
		}
	})
}

// TestNoCalledViaExemption: no policy of the stack (resource policies, key policies, roles)
// has a condition on aws:CalledVia: every CloudFormation stack's calls carry
// cloudformation.amazonaws.com, so such an exemption lets any one-resource stack through.
func TestNoCalledViaExemption(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		for name, r := range tpl.Resources {
			raw, err := json.Marshal(r.Properties)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(strings.ToLower(string(raw)), "aws:calledvia") {
				t.Errorf("%s has a condition on aws:CalledVia: any stack's CloudFormation calls carry it", name)
			}
		}
	})
}

// forEachDeployer runs check on every variant resolved (its own parameters, conditions taken)
// twice: with no DeploymentRoleArn and with one.
func forEachDeployer(t *testing.T, check func(t *testing.T, tpl policycheck.Template, deployer string)) {
	for name, params := range variants {
		t.Run(name, func(t *testing.T) {
			expanded := expand(t, params...)
			for _, role := range []string{"", testDeployer} {
				values := map[string]string{"DeploymentRoleArn": role}
				for _, p := range params {
					k, v, _ := strings.Cut(p, "=")
					values[k] = v
				}
				tpl, err := policycheck.Resolved(expanded, values)
				if err != nil {
					t.Fatal(err)
				}
				check(t, tpl, role)
			}
		})
	}
}

// testDeployer is the DeploymentRoleArn the policy tests resolve the template with.
const testDeployer = "arn:aws:iam::123456789012:role/resetnotify-deploy"

// deniedButDeployer reports whether stmts deny action to every principal: but aws:PrincipalArn
// DeploymentRoleArn when deployer is set (the only condition), with no condition when not.
func deniedButDeployer(stmts []policycheck.Statement, action, deployer string) bool {
	return slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
		if s.Effect != "Deny" || s.Principal != "*" || !s.Allows(action) {
			return false
		}
		if deployer == "" {
			return s.Condition == nil
		}
		arns, _ := s.Condition["ArnNotEquals"].(map[string]any)
		return len(s.Condition) == 1 && len(arns) == 1 && policycheck.Ref(arns["aws:PrincipalArn"]) == "DeploymentRoleArn"
	})
}

func TestOnlyTheAuditFunctionReportsFailures(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		var found bool
		for _, r := range tpl.Resources {
			if r.Type != "AWS::SQS::QueuePolicy" || len(listOf(r.Properties["Queues"])) != 1 ||
				policycheck.Ref(listOf(r.Properties["Queues"])[0]) != "AuditFailureQueue" {
				continue
			}
			doc := r.Properties["PolicyDocument"]
			found = slices.ContainsFunc(policycheck.Statements("", doc), func(s policycheck.Statement) bool {
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows("sqs:SendMessage") && len(s.Condition) == 1 &&
					onlyPrincipals(s.Condition, "AuditRole")
			})
		}
		if !found {
			t.Error("no queue policy denies sqs:SendMessage on AuditFailureQueue to all but the audit role")
		}
	})
}

// TestNoTagGuardsData checks every policy of the stack (roles, keys, the table, queues): a
// principal that may tag a role or pass session tags could claim a tag, so no condition rests
// on aws:PrincipalTag.
func TestNoTagGuardsData(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		for name, r := range tpl.Resources {
			raw, err := json.Marshal(r.Properties)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(strings.ToLower(string(raw)), "aws:principaltag") {
				t.Errorf("%s has a condition on aws:PrincipalTag", name)
			}
		}
	})
}
