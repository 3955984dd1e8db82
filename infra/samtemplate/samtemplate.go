// Package samtemplate reads template.yaml, the project's SAM template, so that the local stack,
// the deploy checks and the tests take their settings from it instead of copying them. It
// understands the CloudFormation short tags (!Ref, !GetAtt, !Sub, !If ...) as their long forms
// and resolves a !Ref to a parameter's default, which is what a deploy without overrides gets.
// It is not a CloudFormation engine: it evaluates only what the settings it is asked for use.
package samtemplate

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed SAM template.
type Template struct {
	Parameters map[string]map[string]any
	Conditions map[string]any
	Globals    map[string]map[string]any
	Resources  map[string]Resource
	// Overrides replace parameter defaults when a !Ref is resolved, as --parameter-overrides do.
	Overrides map[string]string
}

// Resource is one entry of Resources.
type Resource struct {
	Type       string
	Condition  string
	Metadata   map[string]any
	Properties map[string]any
}

// Load parses the template at path.
func Load(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samtemplate.load: %w", err)
	}
	return Parse(raw)
}

// Parse parses a template's YAML.
func Parse(raw []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("samtemplate.parse: %w", err)
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("samtemplate.parse: not one YAML document")
	}
	top, ok := decode(doc.Content[0]).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("samtemplate.parse: the template is not a mapping")
	}
	t := &Template{
		Parameters: map[string]map[string]any{}, Globals: map[string]map[string]any{},
		Resources: map[string]Resource{},
	}
	t.Conditions, _ = top["Conditions"].(map[string]any)
	for name, p := range asMap(top["Parameters"]) {
		t.Parameters[name] = asMap(p)
	}
	for name, g := range asMap(top["Globals"]) {
		t.Globals[name] = asMap(g)
	}
	for id, r := range asMap(top["Resources"]) {
		m := asMap(r)
		typ, _ := m["Type"].(string)
		cond, _ := m["Condition"].(string)
		t.Resources[id] = Resource{Type: typ, Condition: cond, Metadata: asMap(m["Metadata"]), Properties: asMap(m["Properties"])}
	}
	return t, nil
}

// decode turns a YAML node into maps, slices and scalars; a short tag !X becomes {"Fn::X": v}
// (!Ref becomes {"Ref": v}), and !GetAtt a.b becomes {"Fn::GetAtt": [a, b]}.
func decode(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = decode(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			s = append(s, decode(c))
		}
		v = s
	case yaml.AliasNode:
		return decode(n.Alias)
	default:
		v = scalar(n)
	}
	tag := n.Tag
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v
	}
	name := strings.TrimPrefix(tag, "!")
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			id, attr, _ := strings.Cut(s, ".")
			v = []any{id, attr}
		}
	}
	return map[string]any{"Fn::" + name: v}
}

func scalar(n *yaml.Node) any {
	switch n.Tag {
	case "!!int":
		if i, err := strconv.Atoi(n.Value); err == nil {
			return i
		}
	case "!!bool":
		return n.Value == "true"
	case "!!null":
		return nil
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f
		}
	}
	return n.Value
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// Param returns the value a deploy gives parameter name: its override, else its default.
func (t *Template) Param(name string) (string, error) {
	if v, ok := t.Overrides[name]; ok {
		return v, nil
	}
	p, ok := t.Parameters[name]
	if !ok {
		return "", fmt.Errorf("samtemplate: no parameter %s", name)
	}
	d, ok := p["Default"]
	if !ok {
		return "", fmt.Errorf("samtemplate: parameter %s has no default", name)
	}
	return fmt.Sprint(d), nil
}

// Resolve evaluates v as far as parameters and conditions allow: a !Ref to a parameter becomes
// its value, !If picks a branch, !FindInMap is not supported. A !Ref to a
// resource or a !GetAtt stays as it is (its value exists only after a deploy).
func (t *Template) Resolve(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return v, nil
	}
	if ref, ok := m["Ref"].(string); ok {
		if _, isParam := t.Parameters[ref]; isParam {
			return t.Param(ref)
		}
		return v, nil
	}
	if args, ok := m["Fn::If"].([]any); ok && len(args) == 3 {
		name, _ := args[0].(string)
		yes, err := t.Condition(name)
		if err != nil {
			return nil, err
		}
		if yes {
			return t.Resolve(args[1])
		}
		return t.Resolve(args[2])
	}
	return v, nil
}

// Condition evaluates the named condition with the parameters' values.
func (t *Template) Condition(name string) (bool, error) {
	c, ok := t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("samtemplate: no condition %s", name)
	}
	return t.evalCondition(c)
}

func (t *Template) evalCondition(c any) (bool, error) {
	m, ok := c.(map[string]any)
	if !ok || len(m) != 1 {
		return false, fmt.Errorf("samtemplate: condition %v is not one function", c)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			name, _ := arg.(string)
			return t.Condition(name)
		case "Fn::Equals":
			if len(args) != 2 {
				return false, fmt.Errorf("samtemplate: Fn::Equals needs 2 values")
			}
			a, err := t.Resolve(args[0])
			if err != nil {
				return false, err
			}
			b, err := t.Resolve(args[1])
			if err != nil {
				return false, err
			}
			return fmt.Sprint(a) == fmt.Sprint(b), nil
		case "Fn::Not", "Fn::And", "Fn::Or":
			var vals []bool
			for _, a := range args {
				b, err := t.evalCondition(a)
				if err != nil {
					return false, err
				}
				vals = append(vals, b)
			}
			switch fn {
			case "Fn::Not":
				return len(vals) == 1 && !vals[0], nil
			case "Fn::And":
				for _, b := range vals {
					if !b {
						return false, nil
					}
				}
				return true, nil
			default:
				for _, b := range vals {
					if b {
						return true, nil
					}
				}
				return false, nil
			}
		}
		return false, fmt.Errorf("samtemplate: condition function %s is not supported", fn)
	}
	return false, nil
}

// Int resolves v and reads it as an integer (CloudFormation passes numbers as strings too).
func (t *Template) Int(v any) (int, error) {
	r, err := t.Resolve(v)
	if err != nil {
		return 0, err
	}
	switch x := r.(type) {
	case int:
		return x, nil
	case string:
		i, err := strconv.Atoi(x)
		if err != nil {
			return 0, fmt.Errorf("samtemplate: %q is not an integer", x)
		}
		return i, nil
	}
	return 0, fmt.Errorf("samtemplate: %v is not an integer", v)
}

// String resolves v and reads it as a string.
func (t *Template) String(v any) (string, error) {
	r, err := t.Resolve(v)
	if err != nil {
		return "", err
	}
	switch x := r.(type) {
	case string:
		return x, nil
	case int, bool, float64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("samtemplate: %v is not a string", v)
}

// Of returns the resources of type typ, sorted by logical ID.
func (t *Template) Of(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Lookup returns the value at a path of keys below m, e.g. Lookup(props, "RedrivePolicy",
// "maxReceiveCount").
func Lookup(m map[string]any, keys ...string) (any, bool) {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
