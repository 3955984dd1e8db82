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
	trustsOnePrincipal(t, "PrefixOperatorRole", "PrefixOperatorPrincipalArn", "arn:aws:iam::123456789012:role/prefix-operators")
}

// TestAuditorRoleTrustsOnePrincipal: auditctl's role reads every audit event, the archive and
// the digests, so, as prefixctl's, it trusts AuditorPrincipalArn alone, never the account.
func TestAuditorRoleTrustsOnePrincipal(t *testing.T) {
	trustsOnePrincipal(t, "AuditorRole", "AuditorPrincipalArn", "arn:aws:iam::123456789012:role/auditors")
}

// trustsOnePrincipal checks that role's trust policy allows only the principal the parameter
// param names, with arn and empty: no Allow at all when it is empty, and never the account root.
func trustsOnePrincipal(t *testing.T, role, param, arn string) {
	t.Helper()
	expanded := expand(t)
	for _, principal := range []string{"", arn} {
		tpl, err := policycheck.Resolved(expanded, map[string]string{param: principal})
		if err != nil {
			t.Fatal(err)
		}
		trust := resourcePolicy(tpl, role, "AssumeRolePolicyDocument")
		for _, s := range trust {
			if s.Effect != "Allow" {
				continue
			}
			p, _ := s.Principal.(map[string]any)
			if principal == "" || policycheck.Ref(p["AWS"]) != param || len(p) != 1 {
				t.Errorf("%s %q: %s trusts %s (%s)", param, principal, role, policycheck.ResourceText(s.Principal), s.Sid)
			}
		}
		if len(trust) == 0 {
			t.Errorf("%s has no trust statement", role)
		}
	}
}
