package policycheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Template is an expanded CloudFormation template, as JSON decodes it.
type Template struct {
	Parameters map[string]Parameter `json:"Parameters"`
	Conditions map[string]any       `json:"Conditions"`
	Resources  map[string]Resource  `json:"Resources"`
}

// Parameter is one parameter of an expanded template.
type Parameter struct {
	Default any `json:"Default"`
}

// Resource is one resource of an expanded template.
type Resource struct {
	Type           string         `json:"Type"`
	Condition      string         `json:"Condition"`
	DeletionPolicy string         `json:"DeletionPolicy"`
	UpdatePolicy   map[string]any `json:"UpdatePolicy"`
	Properties     map[string]any `json:"Properties"`
}

// Expand runs infra/expand-template.py with python (the project virtualenv's interpreter)
// on the template at path, with parameter overrides given as Name=Value, and decodes the
// result.
func Expand(python, script, path string, params ...string) (Template, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(python, append([]string{script, path}, params...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Template{}, fmt.Errorf("policycheck.expand %s %v: %w\n%s", path, params, err, stderr.String())
	}
	var t Template
	if err := json.Unmarshal(stdout.Bytes(), &t); err != nil {
		return Template{}, fmt.Errorf("policycheck.expand %s: %w", path, err)
	}
	return t, nil
}

// Interpreter returns the virtualenv's python under toolsDir (make tools installs it), or an
// error saying how to install it.
func Interpreter(toolsDir string) (string, error) {
	python := filepath.Join(toolsDir, "venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return "", fmt.Errorf("policycheck: no virtualenv with aws-sam-translator at %s (make tools installs it): %w", python, err)
	}
	return python, nil
}
