package gameday

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
)

// docSection returns the text of docs/operations.md from the heading line to the next heading
// of the same or a higher level.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/operations.md has no %q", heading)
	}
	level := strings.Repeat("#", strings.Index(heading, " "))
	if i := regexp.MustCompile(`\n#{1,` + string(rune('0'+len(level))) + `} `).FindStringIndex(after); i != nil {
		after = after[:i[0]]
	}
	return after
}

var backticked = regexp.MustCompile("`([A-Za-z0-9]+)`")

// TestAlarmsDocumentedRunbookedAndProven keeps the template's alarms, docs/operations.md's
// alarm table, its runbooks' "Alarms:" lines, its exempt list and the catalogue in step.
func TestAlarmsDocumentedRunbookedAndProven(t *testing.T) {
	tmpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alarms := append(tmpl.Of("AWS::CloudWatch::Alarm"), tmpl.Of("AWS::CloudWatch::CompositeAlarm")...)
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)

	table := map[string]bool{}
	for _, line := range strings.Split(docSection(t, doc, "## Alarms"), "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 && strings.HasPrefix(line, "| `") {
			for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
				table[m[1]] = true
			}
		}
	}
	runbooks := map[string]bool{}
	for _, para := range strings.Split(docSection(t, doc, "## Runbooks"), "\n\n") {
		if strings.HasPrefix(para, "Alarms: ") {
			for _, m := range backticked.FindAllStringSubmatch(para, -1) {
				runbooks[m[1]] = true
			}
		}
	}
	_, exemptText, _ := strings.Cut(docSection(t, doc, "## Alarms"), "**Proven on the emulator, or exempt.**")
	var exempt []string
	for _, m := range regexp.MustCompile("(?m)^- `([A-Za-z0-9]+)`").FindAllStringSubmatch(exemptText, -1) {
		exempt = append(exempt, m[1])
	}
	if len(exempt) == 0 || len(exempt) > 3 {
		t.Errorf("exempt list %v: want 1 to 3 entries", exempt)
	}
	expected, named := map[string]string{}, map[string]bool{}
	for _, sc := range Scenarios() {
		for _, a := range sc.Expect {
			expected[a] = sc.Name
			named[a] = true
		}
		for a, why := range sc.Allow {
			named[a] = true
			if strings.TrimSpace(why) == "" || strings.Contains(why, "\n") {
				t.Errorf("%s allows %s without its one-line reason", sc.Name, a)
			}
		}
	}

	for _, a := range alarms {
		if !table[a] {
			t.Errorf("%s is not in docs/operations.md's alarm table", a)
		}
		if !runbooks[a] {
			t.Errorf("%s is named by no runbook's \"Alarms:\" line", a)
		}
		sc, isExpected := expected[a]
		switch isExempt := slices.Contains(exempt, a); {
		case !isExpected && !isExempt:
			t.Errorf("%s: no scenario expects it, and it is not exempt: prove it, or make it a dashboard widget", a)
		case isExpected && isExempt:
			t.Errorf("%s: expected by %q and exempt at once: list it in one place", a, sc)
		}
	}
	for name := range table {
		if !slices.Contains(alarms, name) {
			t.Errorf("the alarm table names %s, which the template does not declare", name)
		}
	}
	for name := range named {
		if !slices.Contains(alarms, name) {
			t.Errorf("the catalogue expects or allows %s, which the template does not declare", name)
		}
	}
	for _, name := range exempt {
		if !slices.Contains(alarms, name) {
			t.Errorf("%s is exempt but no alarm of the template", name)
		}
	}
}

// TestCompositeAndMathDefs: a math alarm's definition takes its first MetricStat's period and
// metric; a composite takes its slowest child's window.
func TestCompositeAndMathDefs(t *testing.T) {
	q := func(id, name string, period int32) cwtypes.MetricDataQuery {
		return cwtypes.MetricDataQuery{Id: aws.String(id), MetricStat: &cwtypes.MetricStat{Period: aws.Int32(period), Stat: aws.String("Sum"),
			Metric: &cwtypes.Metric{Namespace: aws.String("ns"), MetricName: aws.String(name)}}}
	}
	m := mathMetric(cwtypes.MetricAlarm{AlarmName: aws.String("fast"), EvaluationPeriods: aws.Int32(1),
		Metrics: []cwtypes.MetricDataQuery{{Id: aws.String("burn"), Expression: aws.String("e / t")}, q("t", "Requests", 300), q("e", "Errors", 300)}})
	if aws.ToInt32(m.Period) != 300 || aws.ToString(m.MetricName) != "Requests" || m.Statistic != "Sum" {
		t.Errorf("math alarm read as period %d, metric %s, stat %s", aws.ToInt32(m.Period), aws.ToString(m.MetricName), m.Statistic)
	}
	defs := map[string]AlarmDef{
		"s-Fast-A": {Name: "s-Fast-A", Metric: "Errors", Period: 5 * time.Minute, Evals: 1},
		"s-Slow-B": {Name: "s-Slow-B", Metric: "Errors", Period: 5 * time.Minute, Evals: 6},
	}
	d := compositeDef("s-Page-C", `ALARM("s-Fast-A") OR ALARM(arn:aws:cloudwatch:r:1:alarm:s-Slow-B)`, defs)
	if d.Name != "s-Page-C" || d.Window() != 30*time.Minute || d.Metric != "Errors" {
		t.Errorf("composite %+v, want the slow child's 30-minute window under its own name", d)
	}
}
