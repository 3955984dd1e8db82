package policycheck_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// tableWrites are the actions that write items of a table.
var tableWrites = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}

// leadingKeysOnly reports whether cond limits a request to partitions matching exactly the
// patterns want (ForAllValues:StringLike dynamodb:LeadingKeys).
func leadingKeysOnly(cond map[string]any, want ...string) bool {
	got := leadingKeys(cond, "ForAllValues:StringLike")
	return len(got) > 0 && slices.EqualFunc(got, want, func(g any, w string) bool { return g == w })
}

// TestOnlyPrefixctlAndDispatchWritePrefixDecisions: a prefix decision sets or lifts a block,
// so the conversion table's policy denies writes to the decisions partition and the automatic
// blocks' history to every principal but PrefixOperatorRole (prefixctl's) and the dispatch
// role, and denies
// dispatch an allow; and no role's own policy lets it write outside its partitions: intake and
// dispatch count in "p#" only (there is no country counter), and only dispatch and prefixctl's
// role put decisions.
func TestOnlyPrefixctlAndDispatchWritePrefixDecisions(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		table := resourcePolicy(tpl, "ConversionTable", "ResourcePolicy", "PolicyDocument")
		for _, a := range tableWrites {
			if !deniesPartitionWrites(table, a, []any{"decisions", "a#*"}, "DispatchRole", "PrefixOperatorRole") {
				t.Errorf("the conversion table's policy does not deny %s on the decisions to all but dispatch and prefixctl's role", a)
			}
		}
		if !slices.ContainsFunc(table, func(s policycheck.Statement) bool {
			attrs, _ := s.Condition["ForAnyValue:StringEquals"].(map[string]any)
			is, _ := s.Condition["ArnEquals"].(map[string]any)
			return s.Effect == "Deny" && s.Principal == "*" && s.Allows("dynamodb:PutItem") && s.Allows("dynamodb:UpdateItem") &&
				slices.Equal(listOf(attrs["dynamodb:Attributes"]), []any{"allow"}) && policycheck.Ref(is["aws:PrincipalArn"]) == "DispatchRole"
		}) {
			t.Error("the conversion table's policy does not deny dispatch a decision with the allow attribute")
		}
		for _, a := range []string{"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete"} {
			if !slices.ContainsFunc(table, func(s policycheck.Statement) bool {
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows(a) && s.Condition == nil
			}) {
				t.Errorf("the conversion table's policy does not deny %s (no leading key to check) to every principal", a)
			}
		}
		for role, stmts := range policycheck.RolePolicies(tpl) {
			for _, s := range stmts {
				if s.Effect != "Allow" || !slices.ContainsFunc(s.Resources, func(r any) bool { return policycheck.Ref(r) == "ConversionTable" }) {
					continue
				}
				for _, a := range tableWrites {
					switch {
					case !s.Allows(a), leadingKeysOnly(s.Condition, "p#*"):
					case role == "DispatchRole" && a == "dynamodb:PutItem" && leadingKeysOnly(s.Condition, "decisions", "a#*"):
					case role == "PrefixOperatorRole" && a == "dynamodb:PutItem" && leadingKeysOnly(s.Condition, "decisions", "d#*"):
					default:
						t.Errorf("%s may %s on the conversion table beyond its partitions (%s)", role, a, s.Sid)
					}
				}
			}
		}
	})
}

// TestDispatchCannotRewriteOperatorHistory: the operators' history ("d#" partitions: who
// blocked or allowed a prefix, when and why) is written by PrefixOperatorRole alone: the
// conversion table's policy denies every other principal, dispatch included, and dispatch's
// own policy reaches only the decisions and the automatic blocks' history ("a#").
func TestDispatchCannotRewriteOperatorHistory(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		table := resourcePolicy(tpl, "ConversionTable", "ResourcePolicy", "PolicyDocument")
		for _, a := range tableWrites {
			if !deniesPartitionWrites(table, a, []any{"d#*"}, "PrefixOperatorRole") {
				t.Errorf("the conversion table's policy does not deny %s on the operators' history to all but prefixctl's role", a)
			}
		}
		for _, s := range policycheck.RolePolicies(tpl)["DispatchRole"] {
			if s.Effect != "Allow" || !slices.ContainsFunc(s.Resources, func(r any) bool { return policycheck.Ref(r) == "ConversionTable" }) {
				continue
			}
			keys := leadingKeys(s.Condition, "ForAllValues:StringLike")
			if len(keys) == 0 && slices.ContainsFunc(tableWrites, s.Allows) {
				t.Errorf("dispatch may write any partition (%s)", s.Sid)
			}
			for _, k := range keys {
				if p, _ := k.(string); p == "d#fp" || strings.HasSuffix(p, "*") && strings.HasPrefix("d#fp", strings.TrimSuffix(p, "*")) {
					t.Errorf("dispatch may write the operators' history: %s (%s)", p, s.Sid)
				}
			}
		}
	})
}

// deniesPartitionWrites reports whether table holds a deny of action, to every principal but
// the roles except names, on items whose leading keys are keys (and on no other condition).
func deniesPartitionWrites(table []policycheck.Statement, action string, keys []any, except ...string) bool {
	return slices.ContainsFunc(table, func(s policycheck.Statement) bool {
		others := map[string]any{"ArnNotEquals": s.Condition["ArnNotEquals"]}
		return s.Effect == "Deny" && s.Principal == "*" && s.Allows(action) && len(s.Condition) == 2 &&
			slices.Equal(leadingKeys(s.Condition, "ForAnyValue:StringLike"), keys) && onlyPrincipals(others, except...)
	})
}
