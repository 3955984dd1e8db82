package policycheck_test

import (
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// TestPrefixOperatorRoleTrustsOnePrincipal: prefixctl's role overrides the conversion guard's
// decisions, so its trust policy allows PrefixOperatorPrincipalArn alone, never the whole
// account (whose every principal IAM allows sts:AssumeRole could assume it), and nobody when
// the parameter is empty.
func TestPrefixOperatorRoleTrustsOnePrincipal(t *testing.T) {
	expanded := expand(t)
	for _, operator := range []string{"", "arn:aws:iam::123456789012:role/prefix-operators"} {
		tpl, err := policycheck.Resolved(expanded, map[string]string{"PrefixOperatorPrincipalArn": operator})
		if err != nil {
			t.Fatal(err)
		}
		trust := resourcePolicy(tpl, "PrefixOperatorRole", "AssumeRolePolicyDocument")
		for _, s := range trust {
			if s.Effect != "Allow" {
				continue
			}
			p, _ := s.Principal.(map[string]any)
			if operator == "" || policycheck.Ref(p["AWS"]) != "PrefixOperatorPrincipalArn" || len(p) != 1 {
				t.Errorf("operator %q: PrefixOperatorRole trusts %s (%s)", operator, policycheck.ResourceText(s.Principal), s.Sid)
			}
		}
		if operator == "" && len(trust) == 0 {
			t.Error("PrefixOperatorRole has no trust statement")
		}
	}
}
