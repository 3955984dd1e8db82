package samtemplate_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/resetnotify/resetnotify/dev/samtemplate"
)

// templatePath and makefilePath are at the root of the module.
const (
	templatePath = "../../template.yaml"
	makefilePath = "../../Makefile"
)

func load(t *testing.T) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Load(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// TestMakefileArchitectureMatchesTemplate keeps build-% (what `sam build` runs, never told the
// Architecture parameter) building for the template's default Architecture.
func TestMakefileArchitectureMatchesTemplate(t *testing.T) {
	raw, err := os.ReadFile(makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TEMPLATE_GOARCH\s*:=\s*(\S+)\s*$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("Makefile sets no TEMPLATE_GOARCH")
	}
	arch, err := load(t).Param("Architecture")
	if err != nil {
		t.Fatal(err)
	}
	goarch := map[string]string{"arm64": "arm64", "x86_64": "amd64"}[arch]
	if goarch == "" {
		t.Fatalf("template's default Architecture %q has no GOARCH", arch)
	}
	if got := string(m[1]); got != goarch {
		t.Errorf("Makefile TEMPLATE_GOARCH = %s, but template.yaml's default Architecture %s needs GOARCH=%s", got, arch, goarch)
	}
}

func TestResolve(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Size: {Type: Number, Default: 7}
  Name: {Type: String, Default: ""}
Conditions:
  NoName: !Equals [!Ref Name, ""]
  Named: !Not [!Condition NoName]
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      A: !Ref Size
      B: !If [Named, 1, 2]
      C: !GetAtt Other.Arn
`))
	if err != nil {
		t.Fatal(err)
	}
	props := tpl.Resources["Q"].Properties
	if n, err := tpl.Int(props["A"]); err != nil || n != 7 {
		t.Errorf("A = %d, %v; want 7", n, err)
	}
	if n, err := tpl.Int(props["B"]); err != nil || n != 2 {
		t.Errorf("B = %d, %v; want 2 (Name empty)", n, err)
	}
	tpl.Overrides = map[string]string{"Name": "x", "Size": "9"}
	if n, err := tpl.Int(props["B"]); err != nil || n != 1 {
		t.Errorf("B with Name=x = %d, %v; want 1", n, err)
	}
	if n, err := tpl.Int(props["A"]); err != nil || n != 9 {
		t.Errorf("A with Size=9 = %d, %v; want 9", n, err)
	}
	if got, ok := samtemplate.Lookup(props, "C", "Fn::GetAtt"); !ok || len(got.([]any)) != 2 {
		t.Errorf("C = %v", props["C"])
	}
}
