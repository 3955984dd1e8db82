package samtemplate_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
)

// TestTemplateOrder keeps template.yaml readable from the top (checkOrder has the rules).
func TestTemplateOrder(t *testing.T) {
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := checkOrder(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// The sections of Resources, in the order they come.
const (
	sectionData = iota
	sectionQueues
	sectionAPI
	sectionFunctions
	sectionOperations
)

// sectionNames are what a section's banner says, so a reader sees where it starts.
var sectionNames = map[int]string{
	sectionData: "Data", sectionQueues: "Queues", sectionAPI: "HTTP API",
	sectionFunctions: "Functions", sectionOperations: "Operations",
}

// topOrder is the order of the template's top-level keys: the SAM and CloudFormation headers,
// then Resources, then Outputs.
var topOrder = []string{
	"AWSTemplateFormatVersion", "Transform", "Description", "Metadata", "Parameters", "Rules",
	"Mappings", "Conditions", "Globals", "Resources", "Outputs",
}

// banner is a comment line of dashes: the top and bottom of a section's banner.
var banner = regexp.MustCompile(`(?m)^#\s*-{10,}\s*$`)

// checkOrder lists where a template breaks the house order of Resources:
//
//	data (tables, keys, buckets, SMS settings) -> queues -> HTTP API (API, stage, access logs, routes,
//	integrations, invoke permissions) -> one block per function -> operations.
//
// A function's block starts with the function and holds its log group (/aws/lambda/${F}),
// its role (the function's Role), the IAM policies of that role, an event source that is
// its alone (a queue or topic no other function or role names), and its own alarms. An alarm
// is a function's own when every metric it reads is that function's: an AWS/Lambda metric of
// its FunctionName, an AWS/SQS metric of a queue it consumes (or of that queue's DLQ), or a
// resetnotify metric whose Function dimension names it (provider-events ->
// ProviderEventsFunction). Any other alarm, the alarm topic, the dashboard and roles no
// function runs as (and their policies) are operations. Each section and each function block
// starts with a banner (a comment between lines of dashes) naming it: the section's name, or
// the function's logical ID; no other resource has one. A resource of a type with no rule here is
// an error, so a new kind of resource gets a place before it lands anywhere.
func checkOrder(raw []byte) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("template is not one mapping")
	}
	tpl, err := samtemplate.Parse(raw)
	if err != nil {
		return nil, err
	}
	var problems []string
	top := doc.Content[0]
	var resources *yaml.Node
	last := -1
	for i := 0; i+1 < len(top.Content); i += 2 {
		key := top.Content[i].Value
		pos := slices.Index(topOrder, key)
		switch {
		case pos < 0:
			problems = append(problems, fmt.Sprintf("top-level key %s has no place in the order %v", key, topOrder))
		case pos < last:
			problems = append(problems, fmt.Sprintf("top-level key %s comes after %s; the order is %v", key, topOrder[last], topOrder))
		default:
			last = pos
		}
		if key == "Resources" {
			resources = top.Content[i+1]
		}
	}
	if resources == nil || resources.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("template has no Resources mapping")
	}

	p := newPlacer(tpl)
	prevSection, prevOwner := -1, ""
	seenBlock := map[string]bool{}
	for i := 0; i+1 < len(resources.Content); i += 2 {
		key := resources.Content[i]
		id := key.Value
		section, owner, err := p.place(id)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		where := sectionNames[section]
		if owner != "" {
			where = owner + "'s block"
		}
		starts := section != prevSection || owner != prevOwner
		misplaced := true
		switch {
		case section < prevSection:
			problems = append(problems, fmt.Sprintf("%s (%s) comes after the %s section", id, where, sectionNames[prevSection]))
		case owner != "" && owner != prevOwner && seenBlock[owner]:
			problems = append(problems, fmt.Sprintf("%s (%s) comes after %s's block has ended", id, where, owner))
		case owner != "" && owner != prevOwner && id != owner:
			problems = append(problems, fmt.Sprintf("%s's block starts with %s, not with the function", owner, id))
		default:
			misplaced = false
		}
		if owner != "" {
			seenBlock[owner] = true
		}
		comment := key.HeadComment
		switch {
		case misplaced:
			// One problem per resource: where it is, not also what its banner lacks.
		case starts && !banner.MatchString(comment):
			problems = append(problems, fmt.Sprintf("%s starts %s but has no banner above it", id, where))
		case starts && owner != "" && !strings.Contains(comment, owner):
			problems = append(problems, fmt.Sprintf("the banner above %s does not name %s", id, owner))
		case starts && owner == "" && !strings.Contains(comment, sectionNames[section]):
			problems = append(problems, fmt.Sprintf("the banner above %s does not name the %s section", id, sectionNames[section]))
		case !starts && banner.MatchString(comment):
			problems = append(problems, fmt.Sprintf("%s has a banner above it but starts no section or block (it is in %s)", id, where))
		}
		if section > prevSection {
			prevSection = section
		}
		prevOwner = owner
	}
	return problems, nil
}

// placer says which section, and which function's block, a resource belongs to.
type placer struct {
	tpl       *samtemplate.Template
	functions map[string]bool
	roleOf    map[string]string          // role logical ID -> the function that runs as it
	consumer  map[string]string          // queue or topic -> the function it is an event source of
	parentQ   map[string]string          // DLQ -> the queue that redrives to it
	users     map[string]map[string]bool // logical ID -> functions whose properties or role name it
	stageLogs map[string]bool            // log groups of an API stage's access logs
}

func newPlacer(tpl *samtemplate.Template) *placer {
	p := &placer{
		tpl: tpl, functions: map[string]bool{}, roleOf: map[string]string{}, consumer: map[string]string{},
		parentQ: map[string]string{}, users: map[string]map[string]bool{}, stageLogs: map[string]bool{},
	}
	for _, fn := range tpl.Of("AWS::Serverless::Function") {
		p.functions[fn] = true
	}
	for fn := range p.functions {
		props := tpl.Resources[fn].Properties
		for _, role := range refs(props["Role"]) {
			p.roleOf[role] = fn
		}
		events, _ := props["Events"].(map[string]any)
		for _, ev := range events {
			evProps, _ := samtemplate.Lookup(asMap(ev), "Properties")
			for _, field := range []string{"Queue", "Topic", "Stream"} {
				for _, src := range refs(asMap(evProps)[field]) {
					p.consumer[src] = fn
				}
			}
		}
	}
	for fn := range p.functions {
		named := refs(p.tpl.Resources[fn].Properties)
		for role, owner := range p.roleOf {
			if owner == fn {
				named = append(named, refs(p.tpl.Resources[role].Properties)...)
			}
		}
		for _, id := range named {
			if p.users[id] == nil {
				p.users[id] = map[string]bool{}
			}
			p.users[id][fn] = true
		}
	}
	for id, r := range tpl.Resources {
		switch r.Type {
		case "AWS::SQS::Queue":
			dlq, _ := samtemplate.Lookup(r.Properties, "RedrivePolicy", "deadLetterTargetArn")
			for _, q := range refs(dlq) {
				p.parentQ[q] = id
			}
		case "AWS::ApiGatewayV2::Stage", "AWS::ApiGateway::Stage":
			dest, _ := samtemplate.Lookup(r.Properties, "AccessLogSettings", "DestinationArn")
			for _, lg := range refs(dest) {
				p.stageLogs[lg] = true
			}
		}
	}
	return p
}

// place returns id's section and, in the functions section, the function whose block it is in.
func (p *placer) place(id string) (section int, owner string, err error) {
	r := p.tpl.Resources[id]
	switch {
	case r.Type == "AWS::Serverless::Function":
		return sectionFunctions, id, nil
	case r.Type == "AWS::DynamoDB::Table", strings.HasPrefix(r.Type, "AWS::KMS::"), strings.HasPrefix(r.Type, "AWS::S3::"),
		r.Type == "AWS::SSM::Parameter", strings.HasPrefix(r.Type, "AWS::SecretsManager::"),
		strings.HasPrefix(r.Type, "AWS::SMSVOICE::"):
		return sectionData, "", nil
	case strings.HasPrefix(r.Type, "AWS::ApiGatewayV2::"), strings.HasPrefix(r.Type, "AWS::ApiGateway::"),
		r.Type == "AWS::Serverless::HttpApi", r.Type == "AWS::Serverless::Api":
		return sectionAPI, "", nil
	case r.Type == "AWS::Lambda::Permission":
		if principal, _ := r.Properties["Principal"].(string); principal == "apigateway.amazonaws.com" {
			return sectionAPI, "", nil
		}
		if fn := p.onlyFunction(refs(r.Properties["FunctionName"])); fn != "" {
			return sectionFunctions, fn, nil
		}
	case r.Type == "AWS::Logs::LogGroup":
		if p.stageLogs[id] {
			return sectionAPI, "", nil
		}
		name, _ := r.Properties["LogGroupName"].(map[string]any)
		if sub, ok := name["Fn::Sub"].(string); ok {
			if fn := strings.TrimSuffix(strings.TrimPrefix(sub, "/aws/lambda/${"), "}"); p.functions[fn] && sub == "/aws/lambda/${"+fn+"}" {
				return sectionFunctions, fn, nil
			}
		}
	case r.Type == "AWS::IAM::Role":
		if fn := p.roleOf[id]; fn != "" {
			return sectionFunctions, fn, nil
		}
		return sectionOperations, "", nil
	case r.Type == "AWS::IAM::Policy":
		var owners []string
		for _, role := range refs(r.Properties["Roles"]) {
			owners = append(owners, p.roleOf[role])
		}
		if fn := p.onlyFunction(owners); fn != "" {
			return sectionFunctions, fn, nil
		}
		if len(owners) > 0 && !slices.ContainsFunc(owners, func(o string) bool { return o != "" }) {
			return sectionOperations, "", nil // the policy of roles for people, like the roles
		}
	case r.Type == "AWS::SQS::Queue", r.Type == "AWS::SNS::Topic":
		if fn := p.ownedSource(id); fn != "" {
			return sectionFunctions, fn, nil
		}
		if r.Type == "AWS::SQS::Queue" || p.consumer[id] != "" {
			return sectionQueues, "", nil
		}
		return sectionOperations, "", nil
	case r.Type == "AWS::SNS::TopicPolicy", r.Type == "AWS::SQS::QueuePolicy", r.Type == "AWS::SNS::Subscription":
		var targets []string
		for _, field := range []string{"Topics", "Queues", "TopicArn"} {
			targets = append(targets, refs(r.Properties[field])...)
		}
		if len(targets) > 0 {
			return p.placeAll(id, targets)
		}
	case r.Type == "AWS::CloudWatch::Alarm":
		if fn := p.alarmOwner(r.Properties); fn != "" {
			return sectionFunctions, fn, nil
		}
		return sectionOperations, "", nil
	case r.Type == "AWS::CloudWatch::Dashboard", r.Type == "AWS::CloudWatch::CompositeAlarm":
		return sectionOperations, "", nil
	}
	return 0, "", fmt.Errorf("%s (%s): TestTemplateOrder has no rule placing it; add one", id, r.Type)
}

// placeAll places a policy or subscription where its one target (or all its targets) are.
func (p *placer) placeAll(id string, targets []string) (int, string, error) {
	section, owner, err := p.place(targets[0])
	if err != nil {
		return 0, "", err
	}
	for _, t := range targets[1:] {
		s, o, err := p.place(t)
		if err != nil {
			return 0, "", err
		}
		if s != section || o != owner {
			return 0, "", fmt.Errorf("%s names %s and %s, which are in different sections", id, targets[0], t)
		}
	}
	return section, owner, nil
}

// ownedSource returns the function a queue or topic belongs to alone: the one it is an event
// source of (for a DLQ, of its queue), when no other function or role names it.
func (p *placer) ownedSource(id string) string {
	fn := p.consumer[id]
	if parent := p.parentQ[id]; parent != "" {
		fn = p.ownedSource(parent)
	}
	if fn == "" {
		return ""
	}
	for user := range p.users[id] {
		if user != fn {
			return ""
		}
	}
	return fn
}

// alarmOwner returns the function every metric of an alarm is about, or "" when the metrics
// are about several functions or none (see checkOrder).
func (p *placer) alarmOwner(props map[string]any) string {
	metrics := []map[string]any{props}
	list, _ := props["Metrics"].([]any)
	for _, m := range list {
		if metric, ok := samtemplate.Lookup(asMap(m), "MetricStat", "Metric"); ok {
			metrics = append(metrics, asMap(metric))
		}
	}
	var owners []string
	for _, m := range metrics {
		if _, ok := m["Namespace"]; !ok {
			continue
		}
		owners = append(owners, p.metricOwner(m))
	}
	return p.onlyFunction(owners)
}

// metricOwner returns the function a metric is about, or "".
func (p *placer) metricOwner(metric map[string]any) string {
	dims := map[string]any{}
	list, _ := metric["Dimensions"].([]any)
	for _, d := range list {
		name, _ := asMap(d)["Name"].(string)
		dims[name] = asMap(d)["Value"]
	}
	ns := metric["Namespace"]
	if sub, ok := asMap(ns)["Fn::Sub"].(string); ok && strings.HasPrefix(sub, "resetnotify/") {
		name, _ := dims["Function"].(string)
		if fn := functionID(name); p.functions[fn] {
			return fn
		}
		return ""
	}
	switch ns {
	case "AWS/Lambda":
		return p.onlyFunction(refs(dims["FunctionName"]))
	case "AWS/SQS":
		// A queue's alarms are its consumer's; a DLQ's, the consumer's of the queue it catches for.
		var consumers []string
		for _, q := range refs(dims["QueueName"]) {
			if parent := p.parentQ[q]; parent != "" {
				q = parent
			}
			consumers = append(consumers, p.consumer[q])
		}
		return p.onlyFunction(consumers)
	}
	return ""
}

// onlyFunction returns the function ids all name, or "" unless they name exactly one.
func (p *placer) onlyFunction(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	for _, id := range ids {
		if id != ids[0] {
			return ""
		}
	}
	if !p.functions[ids[0]] {
		return ""
	}
	return ids[0]
}

// functionID is the logical ID of the function whose metrics say Function=name:
// provider-events -> ProviderEventsFunction.
func functionID(name string) string {
	if name == "" {
		return ""
	}
	var b strings.Builder
	for _, part := range strings.Split(name, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Function"
}

// subRef is a ${Name} or ${Name.Attr} in a Fn::Sub string (not ${AWS::...}).
var subRef = regexp.MustCompile(`\$\{([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}`)

// refs returns the logical IDs v names with Ref, Fn::GetAtt or Fn::Sub, in order.
func refs(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["Ref"].(string); ok && len(x) == 1 {
				out = append(out, ref)
				return
			}
			if att, ok := x["Fn::GetAtt"].([]any); ok && len(x) == 1 && len(att) > 0 {
				if id, ok := att[0].(string); ok {
					out = append(out, id)
				}
				return
			}
			if sub, ok := x["Fn::Sub"]; ok && len(x) == 1 {
				s, _ := sub.(string)
				if list, ok := sub.([]any); ok && len(list) > 0 {
					s, _ = list[0].(string)
					walk(list[1:])
				}
				for _, m := range subRef.FindAllStringSubmatch(s, -1) {
					out = append(out, m[1])
				}
				return
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// orderFixture is a small template in the house order; the cases of TestCheckOrder break it.
const orderFixture = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  # ------------
  # Data
  # ------------
  Table:
    Type: AWS::DynamoDB::Table
  # ------------
  # Queues
  # ------------
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: !GetAtt JobsDLQ.Arn}
  JobsDLQ:
    Type: AWS::SQS::Queue
  # ------------
  # HTTP API
  # ------------
  Api:
    Type: AWS::ApiGatewayV2::Api
  # ------------
  # Functions: AFunction
  # ------------
  AFunction:
    Type: AWS::Serverless::Function
    Properties:
      Role: !GetAtt ARole.Arn
      Environment: {Variables: {JOBS: !Ref Jobs}}
  ALogs:
    Type: AWS::Logs::LogGroup
    Properties:
      LogGroupName: !Sub /aws/lambda/${AFunction}
  ARole:
    Type: AWS::IAM::Role
  AErrorsAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/Lambda
      Dimensions: [{Name: FunctionName, Value: !Ref AFunction}]
  # ------------
  # BFunction
  # ------------
  BFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt Jobs.Arn}}
  JobsDLQAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/SQS
      Dimensions: [{Name: QueueName, Value: !GetAtt JobsDLQ.QueueName}]
  BRefusalsAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: !Sub resetnotify/${AWS::StackName}
      Dimensions: [{Name: Function, Value: b}]
  # ------------
  # Operations
  # ------------
  Topic:
    Type: AWS::SNS::Topic
  AllErrorsAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Metrics:
        - MetricStat: {Metric: {Namespace: AWS/Lambda, Dimensions: [{Name: FunctionName, Value: !Ref AFunction}]}}
        - MetricStat: {Metric: {Namespace: AWS/Lambda, Dimensions: [{Name: FunctionName, Value: !Ref BFunction}]}}
Outputs: {}
`

// TestCheckOrder breaks orderFixture in each way checkOrder must catch.
func TestCheckOrder(t *testing.T) {
	// move cuts the lines of resource id (from its key to the next key at the same depth)
	// and puts them before the line holding before.
	move := func(src, id, before string) string {
		lines := strings.Split(src, "\n")
		start := slices.Index(lines, "  "+id+":")
		end := start + 1
		for end < len(lines) && strings.HasPrefix(lines[end], "    ") {
			end++
		}
		chunk := slices.Clone(lines[start:end])
		rest := slices.Delete(lines, start, end)
		at := slices.IndexFunc(rest, func(l string) bool { return strings.Contains(l, before) })
		return strings.Join(slices.Insert(rest, at, chunk...), "\n")
	}
	cases := []struct {
		name, template, want string
	}{
		{"in order", orderFixture, ""},
		{"a function's alarm among the operations", move(orderFixture, "AErrorsAlarm", "  AllErrorsAlarm:"),
			"AErrorsAlarm (AFunction's block) comes after the Operations section"},
		{"a function's alarm in another function's block", move(orderFixture, "AErrorsAlarm", "  JobsDLQAlarm:"),
			"AErrorsAlarm (AFunction's block) comes after AFunction's block has ended"},
		{"a DLQ alarm away from the queue's consumer", move(orderFixture, "JobsDLQAlarm", "  AErrorsAlarm:"),
			"BFunction's block starts with JobsDLQAlarm, not with the function"},
		{"a resetnotify metric alarm away from its function", move(orderFixture, "BRefusalsAlarm", "  ARole:"),
			"BFunction's block starts with BRefusalsAlarm, not with the function"},
		{"a cross-function alarm in a function's block", move(orderFixture, "AllErrorsAlarm", "  AErrorsAlarm:"),
			"AErrorsAlarm (AFunction's block) comes after the Operations section"},
		{"a table after the queues", move(orderFixture, "Table", "  JobsDLQ:"),
			"Table (Data) comes after the Queues section"},
		{"a block without its banner", strings.Replace(orderFixture, "  # BFunction\n", "", 1),
			"the banner above BFunction does not name BFunction"},
		{"a banner inside a block", strings.Replace(orderFixture, "  ALogs:", "  # ------------\n  ALogs:", 1),
			"ALogs has a banner above it but starts no section or block"},
		{"Outputs before Resources", strings.Replace(orderFixture, "Outputs: {}\n", "", 1) + "Outputs: {}\nConditions: {}\n",
			"top-level key Conditions comes after Outputs"},
		{"a type with no rule", strings.Replace(orderFixture, "AWS::SNS::Topic", "AWS::EFS::FileSystem", 1),
			"Topic (AWS::EFS::FileSystem): TestTemplateOrder has no rule placing it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems, err := checkOrder([]byte(tc.template))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(problems) > 0 {
					t.Errorf("problems in a template in order:\n%s", strings.Join(problems, "\n"))
				}
				return
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem %q among:\n%s", tc.want, strings.Join(problems, "\n"))
			}
		})
	}
}
