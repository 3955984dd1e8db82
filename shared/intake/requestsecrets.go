package intake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// secretMembers are the top-level body members whose values are secrets.
var secretMembers = []string{"to", "params"}

// requestSecrets returns every value a POST body carried under a secret member ("to",
// "params"; in any case, however often, at any depth below it), and each number again
// without its "+", so the log guard can mask them wherever they appear. A body that is not
// JSON yields what could be read before the error.
func requestSecrets(ev events.APIGatewayV2HTTPRequest) []string {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil
		}
		body = decoded
	}
	if len(body) == 0 || len(body) > MaxBodyBytes {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := tok.(string)
		secret := false
		for _, m := range secretMembers {
			secret = secret || strings.EqualFold(name, m)
		}
		vals, err := leaves(dec)
		if err != nil {
			break
		}
		if secret {
			out = append(out, vals...)
		}
	}
	for _, v := range out {
		if digits, ok := strings.CutPrefix(v, "+"); ok {
			out = append(out, digits)
		}
	}
	return out
}

// leaves reads one JSON value from dec and returns its scalar leaves as text.
func leaves(dec *json.Decoder) ([]string, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		var out []string
		for dec.More() {
			if v == '{' {
				if _, err := dec.Token(); err != nil { // a member name
					return out, err
				}
			}
			sub, err := leaves(dec)
			out = append(out, sub...)
			if err != nil {
				return out, err
			}
		}
		_, err := dec.Token() // the closing delimiter
		return out, err
	case string:
		return []string{v}, nil
	case json.Number:
		return []string{v.String()}, nil
	}
	return nil, nil
}
