package policycheck

import (
	"encoding/json"
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
