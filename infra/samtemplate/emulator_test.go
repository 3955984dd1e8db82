package samtemplate_test

import (
	"os"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestEmulatorLeavesOutOnlyMaximumConcurrency: the only !If on Target=emulator is the SQS
// pollers' MaximumConcurrency (the gradual deploys it leaves out are the TargetSettings
// mapping's, which policycheck's TestEveryFunctionShiftsGradually checks). No resource is
// conditional on OnAWS (the metric-math
// and composite alarms deploy on the emulator through infra/emulator/ministack_platform.py), and
// every use of OnAWS is an !If whose AWS branch is {MaximumConcurrency: ...}.
func TestEmulatorLeavesOutOnlyMaximumConcurrency(t *testing.T) {
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	uses := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "Condition" && v.Value == "OnAWS" {
					t.Errorf("line %d: a resource or statement exists on AWS only", k.Line)
				}
			}
		}
		if n.Tag == "!If" && len(n.Content) == 3 && n.Content[0].Value == "OnAWS" {
			uses++
			aws := n.Content[1]
			if aws.Kind != yaml.MappingNode || len(aws.Content) != 2 || aws.Content[0].Value != "MaximumConcurrency" {
				t.Errorf("line %d: !If OnAWS gives more than MaximumConcurrency", n.Line)
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	if uses == 0 {
		t.Error("no !If OnAWS found: has the condition been renamed?")
	}
}
