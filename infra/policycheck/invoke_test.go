package policycheck_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// TestInvokeGuardExample: a function's resource policy cannot refuse a same-account principal
// allowed lambda:InvokeFunction, so docs/security.md gives an SCP that does. Its example must
// parse, deny every invoke action on the stack's functions, and exempt the deployment role
// alone: another role of the account, or the same name in another path, is refused.
func TestInvokeGuardExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(raw), -1)
	var doc map[string]any
	for _, b := range m {
		if strings.Contains(b[1], "lambda:InvokeFunction") {
			if err := json.Unmarshal([]byte(b[1]), &doc); err != nil {
				t.Fatalf("docs/security.md: the invoke guard example is not JSON: %v", err)
			}
		}
	}
	stmts := policycheck.Statements("", doc)
	if len(stmts) != 1 {
		t.Fatalf("docs/security.md: want one invoke guard statement, got %d", len(stmts))
	}
	s := stmts[0]
	function := "arn:aws:lambda:us-east-1:123456789012:function:resetnotify-IntakeFunction-AbC123"
	for _, a := range []string{"lambda:InvokeFunction", "lambda:InvokeAsync", "lambda:InvokeFunctionUrl"} {
		if s.Effect != "Deny" || !s.Allows(a) {
			t.Errorf("the invoke guard does not deny %s", a)
		}
	}
	if len(s.Resources) != 1 || !arnLike(policycheck.ResourceText(s.Resources[0]), function) {
		t.Errorf("the invoke guard's resource %v does not cover %s", s.Resources, function)
	}
	notLike, _ := s.Condition["ArnNotLike"].(map[string]any)
	exempt, _ := notLike["aws:PrincipalArn"].(string)
	if len(s.Condition) != 1 || len(notLike) != 1 || exempt == "" {
		t.Fatalf("the invoke guard's condition is %v, want one ArnNotLike aws:PrincipalArn", s.Condition)
	}
	for arn, want := range map[string]bool{
		"arn:aws:iam::123456789012:role/resetnotify-deploy":          true,
		"arn:aws:iam::123456789012:role/attacker":                    false,
		"arn:aws:iam::123456789012:role/resetnotify-deploy-x":        false,
		"arn:aws:iam::123456789012:user/resetnotify-deploy":          false,
		"arn:aws:iam::123456789012:role/admin/resetnotify-deploy-me": false,
	} {
		if got := arnLike(exempt, arn); got != want {
			t.Errorf("the invoke guard exempts %s: %v, want %v", arn, got, want)
		}
	}
}

// arnLike reports whether arn matches the IAM ArnLike pattern (* any run, ? one character).
func arnLike(pattern, arn string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	return regexp.MustCompile(re).MatchString(arn)
}
