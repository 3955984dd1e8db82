package tablesetup

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// templatePath is template.yaml at the root of the module.
const templatePath = "../../template.yaml"

// shape is what must agree between a table definition here and its resource in the template.
type shape struct {
	BillingMode string
	Attributes  map[string]string // name -> S | N | B
	Key         []string          // "name HASH", "name RANGE", in order
	Indexes     map[string]index
	StreamView  string
	TTL         string
}

type index struct {
	Key        []string
	Projection string
	NonKey     []string
}

func TestTemplateMatchesDefinitions(t *testing.T) {
	resources := templateResources(t)
	cases := []struct {
		logicalID string
		def       *dynamodb.CreateTableInput
		ttl       string
	}{
		{"NotificationsTable", Notifications("n"), TTLAttribute},
		{"AuditTable", Audit("a"), AuditTTLAttribute},
		{"GuardTable", Guard("g"), GuardTTLAttribute},
		{"ConversionTable", Conversion("c"), ConversionTTLAttribute},
		{"ReceiptsTable", Receipts("r"), ReceiptsTTLAttribute},
		{"SealKeysTable", SealKeys("s"), SealKeysTTLAttribute},
	}
	for _, tc := range cases {
		t.Run(tc.logicalID, func(t *testing.T) {
			raw, ok := resources[tc.logicalID]
			if !ok {
				t.Fatalf("template.yaml has no resource %s", tc.logicalID)
			}
			got := templateShape(t, raw)
			want := definitionShape(tc.def, tc.ttl)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("template.yaml %s differs from tables (-definition +template):\n%s", tc.logicalID, diff)
			}
		})
	}
}

func TestTemplateDataProtection(t *testing.T) {
	resources := templateResources(t)
	for _, id := range []string{"NotificationsTable", "AuditTable"} {
		t.Run(id, func(t *testing.T) {
			var r struct {
				DeletionPolicy string
				Properties     struct {
					PointInTimeRecoverySpecification struct{ PointInTimeRecoveryEnabled bool }
					DeletionProtectionEnabled        bool
					SSESpecification                 struct{ SSEEnabled bool }
				}
			}
			decode(t, resources[id], &r)
			p := r.Properties
			if !p.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled || !p.DeletionProtectionEnabled ||
				!p.SSESpecification.SSEEnabled || r.DeletionPolicy != "Retain" {
				t.Errorf("%s: want PITR, deletion protection, SSE and DeletionPolicy Retain; got %+v", id, r)
			}
		})
	}
}

// TestTemplateReceiptsSSE checks that the receipts table is encrypted at rest.
func TestTemplateReceiptsSSE(t *testing.T) {
	var r struct {
		Properties struct {
			SSESpecification struct{ SSEEnabled bool }
		}
	}
	decode(t, templateResources(t)["ReceiptsTable"], &r)
	if !r.Properties.SSESpecification.SSEEnabled {
		t.Error("ReceiptsTable: want SSE")
	}
}

// templateResources returns the template's Resources, each as plain data.
func templateResources(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse template.yaml: %v", err)
	}
	root, ok := plain(&doc).(map[string]any)
	if !ok {
		t.Fatal("template.yaml is not a mapping")
	}
	resources, ok := root["Resources"].(map[string]any)
	if !ok {
		t.Fatal("template.yaml has no Resources mapping")
	}
	return resources
}

// plain converts a YAML node to maps, slices and strings. A CloudFormation short-form tag such
// as !Ref or !GetAtt becomes the long form {"Ref": ...} or {"Fn::GetAtt": ...}, so intrinsic
// functions never break parsing. Scalars stay strings, except booleans, which are decoded.
func plain(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return plain(n.Content[0])
	case yaml.AliasNode:
		return plain(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = plain(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			s = append(s, plain(c))
		}
		v = s
	default:
		v = n.Value
		if n.Tag == "!!bool" {
			v = n.Value == "true"
		}
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := strings.TrimPrefix(n.Tag, "!")
		if name != "Ref" && name != "Condition" {
			name = "Fn::" + name
		}
		return map[string]any{name: v}
	}
	return v
}

// decode copies plain data into a struct through JSON.
func decode(t *testing.T, v any, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

type cfnKey struct{ AttributeName, KeyType string }

func templateShape(t *testing.T, raw any) shape {
	t.Helper()
	var r struct {
		Type       string
		Properties struct {
			BillingMode            string
			AttributeDefinitions   []struct{ AttributeName, AttributeType string }
			KeySchema              []cfnKey
			GlobalSecondaryIndexes []struct {
				IndexName  string
				KeySchema  []cfnKey
				Projection struct {
					ProjectionType   string
					NonKeyAttributes []string
				}
			}
			StreamSpecification     *struct{ StreamViewType string }
			TimeToLiveSpecification struct {
				AttributeName string
				Enabled       bool
			}
		}
	}
	decode(t, raw, &r)
	if r.Type != "AWS::DynamoDB::Table" {
		t.Fatalf("resource type %q, want AWS::DynamoDB::Table", r.Type)
	}
	p := r.Properties
	s := shape{BillingMode: p.BillingMode, Attributes: map[string]string{}, Indexes: map[string]index{}}
	for _, a := range p.AttributeDefinitions {
		if _, dup := s.Attributes[a.AttributeName]; dup {
			t.Errorf("attribute %s defined twice", a.AttributeName)
		}
		s.Attributes[a.AttributeName] = a.AttributeType
	}
	s.Key = keys(p.KeySchema)
	for _, g := range p.GlobalSecondaryIndexes {
		nonKey := append([]string(nil), g.Projection.NonKeyAttributes...)
		sort.Strings(nonKey)
		s.Indexes[g.IndexName] = index{Key: keys(g.KeySchema), Projection: g.Projection.ProjectionType, NonKey: nonKey}
	}
	if p.StreamSpecification != nil {
		s.StreamView = p.StreamSpecification.StreamViewType
	}
	if p.TimeToLiveSpecification.Enabled {
		s.TTL = p.TimeToLiveSpecification.AttributeName
	}
	return s
}

func keys(ks []cfnKey) []string {
	out := make([]string, 0, len(ks))
	for _, k := range ks {
		out = append(out, k.AttributeName+" "+k.KeyType)
	}
	return out
}

func definitionShape(in *dynamodb.CreateTableInput, ttl string) shape {
	s := shape{
		BillingMode: string(in.BillingMode),
		Attributes:  map[string]string{},
		Indexes:     map[string]index{},
		TTL:         ttl,
	}
	for _, a := range in.AttributeDefinitions {
		s.Attributes[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	for _, k := range in.KeySchema {
		s.Key = append(s.Key, fmt.Sprintf("%s %s", aws.ToString(k.AttributeName), k.KeyType))
	}
	for _, g := range in.GlobalSecondaryIndexes {
		ix := index{Projection: string(g.Projection.ProjectionType)}
		for _, k := range g.KeySchema {
			ix.Key = append(ix.Key, fmt.Sprintf("%s %s", aws.ToString(k.AttributeName), k.KeyType))
		}
		ix.NonKey = append([]string(nil), g.Projection.NonKeyAttributes...)
		sort.Strings(ix.NonKey)
		s.Indexes[aws.ToString(g.IndexName)] = ix
	}
	if in.StreamSpecification != nil && aws.ToBool(in.StreamSpecification.StreamEnabled) {
		s.StreamView = string(in.StreamSpecification.StreamViewType)
	}
	return s
}
