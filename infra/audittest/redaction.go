// Package audittest holds what the audit tests of several packages share: a scanner that looks
// for leaked secrets in audit items and CLI output, and a scenario that fills an audit table
// through DynamoDB Local's stream and the real handler.
package audittest

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// E164 matches an E.164 phone number anywhere in a text.
	E164 = regexp.MustCompile(`\+[1-9][0-9]{6,14}`)
	// URL matches an http(s) URL anywhere in a text.
	URL = regexp.MustCompile(`(?i)https?://`)
)

// Leaks returns what in text looks like a secret: each of submitted (the phone numbers and
// param values a scenario sent) that text contains, and every match of E164 and URL. It names
// the pattern for pattern matches, so a report of a leak does not spread it further.
func Leaks(text string, submitted []string) []string {
	var out []string
	for i, s := range submitted {
		if s != "" && strings.Contains(text, s) {
			out = append(out, "submitted value #"+strconv.Itoa(i))
		}
	}
	if E164.MatchString(text) {
		out = append(out, "an E.164 number")
	}
	if URL.MatchString(text) {
		out = append(out, "a URL")
	}
	return out
}
