package auditlog

import (
	"bytes"
	"encoding/json"
)

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// fieldByName indexes fields by attribute name.
var fieldByName = func() map[string]field {
	m := make(map[string]field, len(fields))
	for _, f := range fields {
		m[f.name] = f
	}
	return m
}()

// indexAttributes are the attributes an entry's item carries for the audit table only (its
// index key, write_shard, and its TTL, drop_after): not fields of the entry, so neither part
// of the hash nor of an export. FromItem skips them.
var indexAttributes = map[string]bool{tables.AuditWriteShard: true, tables.AuditDropAfter: true}

// Item returns e as a DynamoDB item: every allow-listed field, empty optional ones omitted,
// and, when e has a write day, its by_write_shard key (write_shard).
func Item(e Entry) map[string]ddbtypes.AttributeValue {
	item := make(map[string]ddbtypes.AttributeValue, len(fields))
	for _, f := range fields {
		v := f.get(&e)
		switch f.kind {
		case kindNumber:
			if v != "0" || f.always {
				item[f.name] = &ddbtypes.AttributeValueMemberN{Value: v}
			}
		case kindBool:
			if v == "true" || f.always {
				item[f.name] = &ddbtypes.AttributeValueMemberBOOL{Value: v == "true"}
			}
		default:
			if v != "" || f.always {
				item[f.name] = &ddbtypes.AttributeValueMemberS{Value: v}
			}
		}
	}
	if e.WriteDay != "" {
		item[tables.AuditWriteShard] = &ddbtypes.AttributeValueMemberS{Value: writeShard(e)}
	}
	return item
}

// FromItem returns the entry stored as item. Attributes outside the allow-list are named in
// Entry.Unexpected and otherwise ignored; their values are never read. The index attribute
// write_shard is skipped. An allow-listed
// attribute of the wrong type is an error that names the attribute, not its value.
func FromItem(item map[string]ddbtypes.AttributeValue) (Entry, error) {
	var e Entry
	var errs []error
	for name, av := range item {
		f, ok := fieldByName[name]
		if n, isNum := av.(*ddbtypes.AttributeValueMemberN); isNum && name == tables.AuditDropAfter {
			e.DropAfter, _ = strconv.ParseInt(n.Value, 10, 64)
		}
		if !ok && indexAttributes[name] {
			continue
		}
		if !ok {
			e.Unexpected = append(e.Unexpected, name)
			continue
		}
		var v string
		switch x := av.(type) {
		case *ddbtypes.AttributeValueMemberS:
			if f.kind != kindString {
				errs = append(errs, fmt.Errorf("%s is a string", name))
				continue
			}
			v = x.Value
		case *ddbtypes.AttributeValueMemberN:
			if f.kind != kindNumber {
				errs = append(errs, fmt.Errorf("%s is a number", name))
				continue
			}
			v = x.Value
		case *ddbtypes.AttributeValueMemberBOOL:
			if f.kind != kindBool {
				errs = append(errs, fmt.Errorf("%s is a boolean", name))
				continue
			}
			v = fmt.Sprint(x.Value)
		default:
			errs = append(errs, fmt.Errorf("%s has an unexpected type", name))
			continue
		}
		if err := f.set(&e, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	sort.Strings(e.Unexpected)
	if err := errors.Join(errs...); err != nil {
		return e, fmt.Errorf("audit.item %s %s: %w", e.EventID, e.Seq, err)
	}
	return e, nil
}

// EntryJSON returns e as a JSON object with its fields in canonical order, under their
// attribute names; numbers and booleans unquoted.
func EntryJSON(e Entry) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range e.Columns() {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(c.Name)
		b.Write(name)
		b.WriteByte(':')
		if c.Number || c.Bool {
			b.WriteString(c.Value)
			continue
		}
		v, _ := json.Marshal(c.Value) // a string always marshals
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// EntryFromJSON reads an object written by EntryJSON. Names outside the allow-list are kept
// in Unexpected, as FromItem does.
func EntryFromJSON(raw []byte) (Entry, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Entry{}, fmt.Errorf("audit.entry json: %w", err)
	}
	var e Entry
	var errs []error
	for name, v := range obj {
		f, ok := fieldByName[name]
		if !ok {
			e.Unexpected = append(e.Unexpected, name)
			continue
		}
		var text string
		switch f.kind {
		case kindString:
			if err := json.Unmarshal(v, &text); err != nil {
				errs = append(errs, fmt.Errorf("%s is not a string", name))
				continue
			}
		default:
			text = string(bytes.TrimSpace(v))
		}
		if text == "" {
			continue
		}
		if err := f.set(&e, text); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	sort.Strings(e.Unexpected)
	if err := errors.Join(errs...); err != nil {
		return e, fmt.Errorf("audit.entry json %s %s: %w", e.EventID, e.Seq, err)
	}
	return e, nil
}
