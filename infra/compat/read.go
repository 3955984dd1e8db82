package compat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// Read decodes each shape with this checkout's decoders: the record as dispatch reads it,
// the message's fields as the workers read them (and its key, which they require valid), the
// receipt as reconcile reads it, and the audit entry as the auditor does, which also requires
// its hash to verify and no attribute outside its allow-list.
func Read(shapes map[string][]byte) (map[string]any, error) {
	out := map[string]any{}
	var errs []error
	for _, name := range []string{RecordFile, MessageFile, ReceiptFile, AuditEntryFile} {
		raw, ok := shapes[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: missing", name))
			continue
		}
		v, err := read(name, raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		out[name] = v
	}
	return out, errors.Join(errs...)
}

func read(name string, raw []byte) (any, error) {
	if name == MessageFile {
		var m notify.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if !notify.ValidStoredKey(m.IdempotencyKey) || m.NotificationID == "" || m.Version < 1 {
			return nil, fmt.Errorf("missing key, notification ID or version: %s", raw)
		}
		return m, nil
	}
	item, err := ParseItem(raw)
	if err != nil {
		return nil, err
	}
	switch name {
	case RecordFile:
		return dynamostore.RecordFromItem(item)
	case ReceiptFile:
		rc, ok, err := providerevents.NewStore(stored(item), "receipts", 0, nil).Get(context.Background(), SampleReceipt().AttemptRef)
		if err == nil && !ok {
			err = errors.New("not found")
		}
		return rc, err
	}
	e, err := auditlog.FromItem(item)
	if err != nil {
		return nil, err
	}
	if len(e.Unexpected) > 0 {
		return nil, fmt.Errorf("attributes outside the allow-list: %v", e.Unexpected)
	}
	if hash, err := auditlog.ComputeHash(e.PrevHash, e); err != nil || hash != e.Hash {
		return nil, fmt.Errorf("hash %s does not verify (computed %s, %v)", e.Hash, hash, err)
	}
	return e, nil
}

// Differences names the shapes that read differently in got and want.
func Differences(got, want map[string]any) []string {
	var out []string
	for _, name := range []string{RecordFile, MessageFile, ReceiptFile, AuditEntryFile} {
		if !reflect.DeepEqual(got[name], want[name]) {
			out = append(out, fmt.Sprintf("%s reads as %+v, want %+v", name, got[name], want[name]))
		}
	}
	return slices.Clip(out)
}

// stored is a receipts table holding one item.
type stored map[string]ddbtypes.AttributeValue

func (s stored) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: s}, nil
}

func (s stored) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errors.New("compat: read only")
}
