package policycheck

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Statement is one IAM policy statement, with Fn::If branches already taken apart: Actions,
// NotActions and Resources hold every value any branch can give.
type Statement struct {
	Role      string // the logical ID of the role the statement belongs to, if any
	Sid       string
	Effect    string
	Actions   []string
	Resources []any
	Principal any
	Condition map[string]any
}

// RolePolicies returns every statement of every AWS::IAM::Role of t, by the role's logical
// ID: the role's inline Policies and the AWS::IAM::RolePolicy and AWS::IAM::Policy resources
// attached to it.
func RolePolicies(t Template) map[string][]Statement {
	out := map[string][]Statement{}
	for name, r := range t.Resources {
		if r.Type != "AWS::IAM::Role" {
			continue
		}
		out[name] = nil
		for _, p := range list(r.Properties["Policies"]) {
			doc, _ := p.(map[string]any)["PolicyDocument"]
			out[name] = append(out[name], Statements(name, doc)...)
		}
	}
	for _, r := range t.Resources {
		switch r.Type {
		case "AWS::IAM::RolePolicy":
			role := ref(r.Properties["RoleName"])
			out[role] = append(out[role], Statements(role, r.Properties["PolicyDocument"])...)
		case "AWS::IAM::Policy":
			for _, rr := range list(r.Properties["Roles"]) {
				role := ref(rr)
				out[role] = append(out[role], Statements(role, r.Properties["PolicyDocument"])...)
			}
		}
	}
	return out
}

// Statements returns the statements of a policy document, each Fn::If branch included.
func Statements(role string, doc any) []Statement {
	m, _ := doc.(map[string]any)
	var out []Statement
	for _, raw := range branches(m["Statement"]) {
		s, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		st := Statement{Role: role, Effect: str(s["Effect"]), Sid: str(s["Sid"]), Principal: s["Principal"]}
		for _, a := range branches(s["Action"]) {
			st.Actions = append(st.Actions, str(a))
		}
		st.Resources = branches(s["Resource"])
		st.Condition, _ = s["Condition"].(map[string]any)
		out = append(out, st)
	}
	return out
}

// Allows reports whether the statement's actions (IAM wildcards included) cover action.
func (s Statement) Allows(action string) bool {
	return slices.ContainsFunc(s.Actions, func(p string) bool { return ActionMatches(p, action) })
}

// ActionMatches reports whether the IAM action pattern (with * and ?) matches action, case
// aside, as IAM compares them.
func ActionMatches(pattern, action string) bool {
	ok, err := path.Match(strings.ToLower(pattern), strings.ToLower(action))
	return err == nil && ok
}

// ResourceText returns a resource value as text: a string as it is, an intrinsic function as
// its JSON (so "*" inside a Fn::Sub string is visible).
func ResourceText(r any) string {
	if s, ok := r.(string); ok {
		return s
	}
	if m, ok := r.(map[string]any); ok {
		if sub, ok := m["Fn::Sub"].(string); ok {
			return sub
		}
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// branches flattens v: a list's items, and both values of every Fn::If (never
// AWS::NoValue), recursively; a single value becomes a list of one.
func branches(v any) []any {
	if m, ok := v.(map[string]any); ok {
		if f, ok := m["Fn::If"].([]any); ok && len(f) == 3 {
			return append(branches(f[1]), branches(f[2])...)
		}
		if ref(m) == "AWS::NoValue" {
			return nil
		}
		return []any{m}
	}
	if l, ok := v.([]any); ok {
		var out []any
		for _, x := range l {
			out = append(out, branches(x)...)
		}
		return out
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// ref returns the logical ID a {"Ref": ID} or {"Fn::GetAtt": [ID, ...]} names, or "".
func ref(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) > 0 {
		return str(g[0])
	}
	return ""
}

// Ref is ref for the tests: the logical ID a Ref or Fn::GetAtt names.
func Ref(v any) string { return ref(v) }

// Resolved returns t with its conditions evaluated for params (Name=Value overrides; other
// parameters take their defaults) and every Fn::If replaced by the branch its condition
// takes, so that a statement is what the stack of those parameters would hold. Resources whose
// condition is false are left out. A condition it cannot evaluate is an error.
func Resolved(t Template, params map[string]string) (Template, error) {
	values := map[string]any{}
	for name, p := range t.Parameters {
		values[name] = p.Default
	}
	for k, v := range params {
		values[k] = v
	}
	conds := map[string]bool{}
	var eval func(v any) (bool, error)
	eval = func(v any) (bool, error) { return evalCondition(v, t.Conditions, values, conds, eval) }
	for name := range t.Conditions {
		if _, err := eval(map[string]any{"Condition": name}); err != nil {
			return Template{}, err
		}
	}
	out := Template{Conditions: t.Conditions, Parameters: t.Parameters, Resources: map[string]Resource{}}
	for name, r := range t.Resources {
		if r.Condition != "" && !conds[r.Condition] {
			continue
		}
		props, _ := takeBranches(r.Properties, conds).(map[string]any)
		out.Resources[name] = Resource{Type: r.Type, Condition: r.Condition, Properties: props}
	}
	return out, nil
}

// evalCondition evaluates one condition expression: Fn::Equals of literals and parameter
// Refs, Fn::Not, Fn::And, Fn::Or, and {"Condition": name} (memoised in conds).
func evalCondition(v any, defs map[string]any, values map[string]any, conds map[string]bool, eval func(any) (bool, error)) (bool, error) {
	m, _ := v.(map[string]any)
	if name, ok := m["Condition"].(string); ok {
		if b, done := conds[name]; done {
			return b, nil
		}
		def, ok := defs[name]
		if !ok {
			return false, fmt.Errorf("policycheck.resolved: no condition %s", name)
		}
		b, err := eval(def)
		conds[name] = b
		return b, err
	}
	args, _ := m["Fn::Equals"].([]any)
	if len(args) == 2 {
		a, b := args[0], args[1]
		if r := ref(a); r != "" {
			a = values[r]
		}
		if r := ref(b); r != "" {
			b = values[r]
		}
		return fmt.Sprint(a) == fmt.Sprint(b), nil
	}
	for op, all := range map[string]bool{"Fn::And": true, "Fn::Or": false} {
		if list, ok := m[op].([]any); ok {
			for _, c := range list {
				b, err := eval(c)
				if err != nil || b != all {
					return b, err
				}
			}
			return all, nil
		}
	}
	if list, ok := m["Fn::Not"].([]any); ok && len(list) == 1 {
		b, err := eval(list[0])
		return !b, err
	}
	return false, fmt.Errorf("policycheck.resolved: cannot evaluate %v", v)
}

// takeBranches returns v with every Fn::If replaced by the branch conds choose, and every
// value that is then AWS::NoValue left out, as CloudFormation leaves it out.
func takeBranches(v any, conds map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		if f, ok := x["Fn::If"].([]any); ok && len(f) == 3 {
			if conds[str(f[0])] {
				return takeBranches(f[1], conds)
			}
			return takeBranches(f[2], conds)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if b := takeBranches(e, conds); !noValue(b) {
				out[k] = b
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if b := takeBranches(e, conds); !noValue(b) {
				out = append(out, b)
			}
		}
		return out
	}
	return v
}

// noValue reports whether v is {"Ref": "AWS::NoValue"}.
func noValue(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 1 && m["Ref"] == "AWS::NoValue"
}
