package policycheck_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// TestSealKeysArePutByIntakeAndReadByDispatch: the seal-keys table holds the sealing key's
// encrypted data keys. Intake may only put them (no read, no update, no delete), dispatch only
// read them; no other role is allowed anything on the table.
func TestSealKeysArePutByIntakeAndReadByDispatch(t *testing.T) {
	want := map[string][]string{"IntakeRole": {"dynamodb:PutItem"}, "DispatchRole": {"dynamodb:GetItem"}}
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		got := map[string][]string{}
		for role, stmts := range policycheck.RolePolicies(tpl) {
			for _, s := range stmts {
				if s.Effect != "Allow" || !slices.ContainsFunc(s.Resources, func(r any) bool {
					return policycheck.Ref(r) == "SealKeysTable" || strings.Contains(policycheck.ResourceText(r), "SealKeysTable") ||
						policycheck.ResourceText(r) == "*"
				}) {
					continue
				}
				for _, a := range s.Actions {
					if policycheck.ActionMatches(a, "dynamodb:GetItem") || strings.HasPrefix(a, "dynamodb:") || a == "*" {
						got[role] = append(got[role], a)
					}
				}
			}
		}
		for role, actions := range got {
			slices.Sort(actions)
			if !slices.Equal(actions, want[role]) {
				t.Errorf("%s may %v on the seal-keys table, want %v", role, actions, want[role])
			}
		}
		for role := range want {
			if _, ok := got[role]; !ok {
				t.Errorf("%s has no access to the seal-keys table, want %v", role, want[role])
			}
		}
	})
}
