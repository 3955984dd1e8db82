package providerevents

import (
	"reflect"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestItemTagsAreTableNames checks every stored attribute against the names in package tables,
// the one source of truth, since a struct tag cannot use a constant.
func TestItemTagsAreTableNames(t *testing.T) {
	want := map[string]bool{
		tables.ReceiptAttemptRef: true, tables.ReceiptMessageID: true, tables.ReceiptStatus: true,
		tables.ReceiptAt: true, tables.ReceiptNotificationID: true, tables.ReceiptProvider: true,
		tables.ReceiptDetail: true, tables.ReceiptRecordedAt: true, tables.ReceiptTTL: true,
	}
	typ := reflect.TypeFor[item]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("dynamodbav"), ",")
		if !want[name] {
			t.Errorf("field %s is stored as %q, which package tables does not name", typ.Field(i).Name, name)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("package tables names %q but item does not store it", name)
	}
}
