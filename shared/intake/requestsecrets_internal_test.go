package intake

import (
	"encoding/base64"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRequestSecrets(t *testing.T) {
	tests := []struct {
		name string
		ev   events.APIGatewayV2HTTPRequest
		want []string
	}{
		{"number and param", events.APIGatewayV2HTTPRequest{Body: `{"event_id":"e","to":"+447700900123","params":{"code":"Q7K2M9"},"locale":"en"}`},
			[]string{"+447700900123", "447700900123", "Q7K2M9"}},
		{"member named twice, in another case", events.APIGatewayV2HTTPRequest{Body: `{"to":"+15555550100","TO":"+15555550199","Params":{"code":"A1","code":"B2"}}`},
			[]string{"+15555550100", "15555550100", "+15555550199", "15555550199", "A1", "B2"}},
		{"nested and non-string values", events.APIGatewayV2HTTPRequest{Body: `{"params":{"x":{"y":["deep",12345]}},"channel":"sms"}`},
			[]string{"deep", "12345"}},
		{"base64 body", events.APIGatewayV2HTTPRequest{Body: base64.StdEncoding.EncodeToString([]byte(`{"to":"+447700900123"}`)), IsBase64Encoded: true},
			[]string{"+447700900123", "447700900123"}},
		{"what could be read of broken JSON", events.APIGatewayV2HTTPRequest{Body: `{"to":"+447700900123","params":{"code":`},
			[]string{"+447700900123", "447700900123"}},
		{"not an object", events.APIGatewayV2HTTPRequest{Body: `"+447700900123"`}, nil},
		{"empty", events.APIGatewayV2HTTPRequest{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, requestSecrets(tc.ev), cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("requestSecrets (-want +got):\n%s", d)
			}
		})
	}
}
