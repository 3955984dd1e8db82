package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode"
)

// errDuplicateName means a JSON object names one member twice.
var errDuplicateName = errors.New("a JSON object repeats a member name")

// checkStrictJSON reports a body that encoding/json would accept but that means two things:
// an object that names a member twice (json keeps the last value, so {"to":A,"to":B} would be
// sealed with B while a proxy or log that read the first saw A), or a body that is JSON null
// rather than an object. encoding/json matches struct fields without regard to case (also
// "ſ" for "s" and the Kelvin sign for "k"), so names equal under Unicode case folding count as
// the same member. Syntax errors are left to the
// decoder, which reports them.
func checkStrictJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	if tok == nil {
		return errors.New("the body is JSON null, not an object")
	}
	if d, ok := tok.(json.Delim); ok {
		return walkJSON(dec, d)
	}
	return nil
}

// walkJSON reads the rest of the array or object opened by open, checking every object in it.
func walkJSON(dec *json.Decoder, open json.Delim) error {
	var seen map[string]bool
	if open == '{' {
		seen = map[string]bool{}
	}
	for dec.More() {
		if open == '{' {
			tok, err := dec.Token()
			if err != nil {
				return nil
			}
			name, _ := tok.(string)
			folded := foldName(name)
			if seen[folded] {
				return errDuplicateName
			}
			seen[folded] = true
		}
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if d, ok := tok.(json.Delim); ok {
			if err := walkJSON(dec, d); err != nil {
				return err
			}
		}
	}
	_, _ = dec.Token() // the closing delimiter
	return nil
}

// foldName maps every rune of name to the smallest rune of its Unicode case-folding orbit, so
// two names that encoding/json would match to the same field map to the same string.
func foldName(name string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, name)
}
