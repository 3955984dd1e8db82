package policycheck_test

import (
	"slices"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// TestSecretsKeyNamesEachReader: the stack's secrets key lets each role decrypt exactly the
// SSM parameters its own policy lets it read (SSM's encryption context names the parameter),
// and denies Decrypt and ReEncrypt to every principal but those roles: alias/aws/ssm would
// let anyone allowed ssm:GetParameter read the provider credentials, pepper and fingerprint key.
func TestSecretsKeyNamesEachReader(t *testing.T) {
	forEachDeployer(t, func(t *testing.T, tpl policycheck.Template, _ string) {
		if _, ok := tpl.Resources["SecretsKey"]; !ok {
			t.Fatal("no SecretsKey")
		}
		key := resourcePolicy(tpl, "SecretsKey", "KeyPolicy")
		var readers []string
		for role, stmts := range policycheck.RolePolicies(tpl) {
			var params []string
			for _, s := range stmts {
				if s.Effect == "Allow" && s.Allows("ssm:GetParameter") {
					for _, r := range s.Resources {
						params = append(params, policycheck.ResourceText(r))
					}
				}
			}
			if len(params) == 0 {
				continue
			}
			readers = append(readers, role)
			slices.Sort(params)
			if got := decryptable(key, role); !slices.Equal(got, params) {
				t.Errorf("the secrets key lets %s decrypt %v, want the parameters it reads %v", role, got, params)
			}
		}
		slices.Sort(readers)
		if !slices.ContainsFunc(key, func(s policycheck.Statement) bool {
			return s.Effect == "Deny" && s.Principal == "*" && s.Allows("kms:Decrypt") && s.Allows("kms:ReEncryptFrom") &&
				len(s.Condition) == 1 && slices.Equal(exempted(s.Condition), readers)
		}) {
			t.Errorf("the secrets key's policy does not deny Decrypt and ReEncrypt to every principal but the readers %v", readers)
		}
	})
}

// decryptable returns, sorted, the parameter ARNs (as text) the key policy's Allow statements
// for role bind its kms:Decrypt to.
func decryptable(key []policycheck.Statement, role string) []string {
	var out []string
	for _, s := range key {
		p, _ := s.Principal.(map[string]any)
		if s.Effect != "Allow" || !s.Allows("kms:Decrypt") || policycheck.Ref(p["AWS"]) != role {
			continue
		}
		eq, _ := s.Condition["StringEquals"].(map[string]any)
		if len(s.Condition) != 1 || len(eq) != 1 {
			out = append(out, "<a grant not bound to parameters>")
			continue
		}
		for _, v := range listOf(eq["kms:EncryptionContext:PARAMETER_ARN"]) {
			out = append(out, policycheck.ResourceText(v))
		}
	}
	slices.Sort(out)
	return out
}
