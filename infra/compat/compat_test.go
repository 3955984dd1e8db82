package compat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/compat"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// releases are testdata's folders: each holds the shapes an earlier release wrote.
func releases(t *testing.T) []string {
	t.Helper()
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if d.IsDir() {
			out = append(out, d.Name())
		}
	}
	if len(out) == 0 {
		t.Fatal("no earlier release's shapes in testdata: make compat-fixtures COMPAT_FROM=<tag> writes them")
	}
	return out
}

func readShape(t *testing.T, release, file string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", release, file))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// current returns the shapes this checkout writes.
func current(t *testing.T) map[string][]byte {
	t.Helper()
	shapes, err := compat.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	return shapes
}

// TestThisReleaseReadsEarlierShapes: during a deploy, this release's dispatch reads records
// the previous intake wrote, its workers take messages the previous one queued, its reconcile
// reads receipts the previous provider-events stored, and its auditor verifies entries the
// previous audit function chained. Each earlier shape must decode to what this release's own
// shape decodes to.
func TestThisReleaseReadsEarlierShapes(t *testing.T) {
	now := current(t)
	own, err := compat.Read(now)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range releases(t) {
		t.Run(rel+"/all", func(t *testing.T) {
			theirs := map[string][]byte{}
			for name := range now {
				theirs[name] = readShape(t, rel, name)
			}
			got, err := compat.Read(theirs)
			if err != nil {
				t.Fatalf("%s's shapes: %v", rel, err)
			}
			for _, d := range compat.Differences(got, own) {
				t.Errorf("%s's %s", rel, d)
			}
		})
		t.Run(rel+"/record", func(t *testing.T) {
			got, want := decodeRecord(t, readShape(t, rel, compat.RecordFile)), decodeRecord(t, now[compat.RecordFile])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the record %s wrote reads differently here (-this release +%s):\n%s", rel, rel, diff)
			}
			got2, want2 := auditOf(t, readShape(t, rel, compat.RecordFile)), auditOf(t, now[compat.RecordFile])
			if diff := cmp.Diff(want2, got2); diff != "" {
				t.Errorf("the audit function builds another entry from the record %s wrote (-this release +%s):\n%s", rel, rel, diff)
			}
		})
		t.Run(rel+"/message", func(t *testing.T) {
			got, err := workercore.ParseMessage(string(readShape(t, rel, compat.MessageFile)))
			if err != nil {
				t.Fatalf("the dispatch message %s queued is poison here: %v", rel, err)
			}
			want, err := workercore.ParseMessage(string(now[compat.MessageFile]))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("the dispatch message %s queued reads as %+v, want %+v", rel, got, want)
			}
		})
		t.Run(rel+"/receipt", func(t *testing.T) {
			if diff := cmp.Diff(decodeReceipt(t, now[compat.ReceiptFile]), decodeReceipt(t, readShape(t, rel, compat.ReceiptFile))); diff != "" {
				t.Errorf("the receipt %s stored reads differently here (-this release +%s):\n%s", rel, rel, diff)
			}
		})
		t.Run(rel+"/audit entry", func(t *testing.T) {
			got, want := decodeEntry(t, readShape(t, rel, compat.AuditEntryFile)), decodeEntry(t, now[compat.AuditEntryFile])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the audit entry %s wrote reads differently here (-this release +%s):\n%s", rel, rel, diff)
			}
		})
	}
}

// TestEarlierReleasesReadThisOne: during a deploy (and after a rollback), the previous
// release's functions read what this one wrote. Its decoders need every attribute it wrote
// itself, of the same type: this release's shapes must keep each one. The previous release's
// auditor hashes the fields it knows, so an audit entry gains none either.
func TestEarlierReleasesReadThisOne(t *testing.T) {
	now := current(t)
	for _, rel := range releases(t) {
		for _, file := range []string{compat.RecordFile, compat.ReceiptFile, compat.AuditEntryFile, compat.MessageFile} {
			t.Run(rel+"/"+file, func(t *testing.T) {
				before, after := fieldTypes(t, readShape(t, rel, file)), fieldTypes(t, now[file])
				for _, name := range slices.Sorted(maps.Keys(before)) {
					if got, ok := after[name]; !ok {
						t.Errorf("%s is gone from %s; %s reads it", name, file, rel)
					} else if got != before[name] {
						t.Errorf("%s in %s is a %s now; %s reads a %s", name, file, got, rel, before[name])
					}
				}
				if file != compat.AuditEntryFile {
					return
				}
				for _, name := range slices.Sorted(maps.Keys(after)) {
					if _, ok := before[name]; !ok {
						t.Errorf("the audit entry gained %s, which %s's auditor does not hash: ship it in two releases (docs/operations.md)", name, rel)
					}
				}
			})
		}
	}
}

// fieldTypes maps each top-level field of a shape to its type: the DynamoDB type of an item's
// attribute, or the JSON type of a message's field.
func fieldTypes(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, v := range fields {
		var typed map[string]json.RawMessage
		if json.Unmarshal(v, &typed) == nil && len(typed) == 1 {
			out[name] = slices.Collect(maps.Keys(typed))[0]
			continue
		}
		var any any
		_ = json.Unmarshal(v, &any)
		out[name] = fmt.Sprintf("%T", any)
	}
	return out
}

func item(t *testing.T, raw []byte) map[string]ddbtypes.AttributeValue {
	t.Helper()
	it, err := compat.ParseItem(raw)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func decodeRecord(t *testing.T, raw []byte) any {
	t.Helper()
	rec, err := dynamostore.RecordFromItem(item(t, raw))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return rec
}

// auditOf is the entry the audit function builds from the record's INSERT.
func auditOf(t *testing.T, raw []byte) auditlog.Entry {
	t.Helper()
	img, err := compat.ParseImage(raw)
	if err != nil {
		t.Fatal(err)
	}
	rec := events.DynamoDBEventRecord{EventID: "ev1", EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: compat.At},
		NewImage:                    img, SequenceNumber: "1001", StreamViewType: "NEW_AND_OLD_IMAGES",
	}}
	e, ok, err := auditlog.Build(rec, auditlog.Meta{Actor: auditlog.Actor{Function: "audit", Version: "1", RequestID: "r"}})
	if err != nil || !ok {
		t.Fatalf("audit entry of the record: built %v: %v", ok, err)
	}
	return e
}

func decodeReceipt(t *testing.T, raw []byte) providerevents.Receipt {
	t.Helper()
	store := providerevents.NewStore(stored(item(t, raw)), "receipts", 0, nil)
	rc, ok, err := store.Get(context.Background(), compat.SampleReceipt().AttemptRef)
	if err != nil || !ok {
		t.Fatalf("receipt: found %v: %v", ok, err)
	}
	return rc
}

// decodeEntry reads an audit entry and checks that it verifies: its hash is the one this
// release computes over its fields and its prev_hash.
func decodeEntry(t *testing.T, raw []byte) auditlog.Entry {
	t.Helper()
	e, err := auditlog.FromItem(item(t, raw))
	if err != nil {
		t.Fatalf("audit entry: %v", err)
	}
	if len(e.Unexpected) > 0 {
		t.Errorf("audit entry: attributes outside this release's allow-list: %v", e.Unexpected)
	}
	hash, err := auditlog.ComputeHash(e.PrevHash, e)
	if err != nil || hash != e.Hash {
		t.Errorf("audit entry: hash %s does not verify here (computed %s, %v)", e.Hash, hash, err)
	}
	return e
}

// stored is a receipts table holding one item.
type stored map[string]ddbtypes.AttributeValue

func (s stored) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: s}, nil
}

func (s stored) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errors.New("read only")
}
