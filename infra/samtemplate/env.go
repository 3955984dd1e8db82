package samtemplate

import (
	"fmt"
	"regexp"
)

// subRef is one ${Name} of an Fn::Sub string.
var subRef = regexp.MustCompile(`\$\{([^}!]+)\}`)

// Env returns the environment a deploy without overrides gives function id: the Globals'
// Variables, then the function's own, each resolved (a !Ref to a parameter is its default, an
// !If picks its branch, an !Sub whose every ${Name} is a parameter is substituted). A variable
// whose value exists only after a deploy (a table's name, a queue's URL, a key's ARN) is left
// out: the caller supplies its local stand-in.
func (t *Template) Env(id string) (map[string]string, error) {
	r, ok := t.Resources[id]
	if !ok || r.Type != "AWS::Serverless::Function" {
		return nil, fmt.Errorf("samtemplate.env: no function %s", id)
	}
	env := map[string]string{}
	for _, vars := range []any{lookupVars(t.Globals["Function"]), lookupVars(r.Properties)} {
		for name, v := range asMap(vars) {
			s, ok, err := t.envValue(v)
			if err != nil {
				return nil, fmt.Errorf("samtemplate.env %s %s: %w", id, name, err)
			}
			if ok {
				env[name] = s
			}
		}
	}
	return env, nil
}

// lookupVars returns props' Environment.Variables.
func lookupVars(props map[string]any) any {
	v, _ := Lookup(props, "Environment", "Variables")
	return v
}

// envValue resolves v to a string, false when it names something only a deploy creates.
func (t *Template) envValue(v any) (string, bool, error) {
	r, err := t.Resolve(v)
	if err != nil {
		return "", false, err
	}
	switch x := r.(type) {
	case string:
		return x, true, nil
	case int, bool, float64:
		return fmt.Sprint(x), true, nil
	}
	sub, ok := asMap(r)["Fn::Sub"].(string)
	if !ok {
		return "", false, nil
	}
	resolved := true
	out := subRef.ReplaceAllStringFunc(sub, func(ref string) string {
		name := subRef.FindStringSubmatch(ref)[1]
		if _, isParam := t.Parameters[name]; !isParam {
			resolved = false
			return ref
		}
		p, err := t.Param(name)
		if err != nil {
			resolved = false
		}
		return p
	})
	return out, resolved, nil
}
