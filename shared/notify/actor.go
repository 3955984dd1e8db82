package notify

import "strings"

// Actor names who made a transition: the function (its Lambda name, or its component name
// outside Lambda), the function version and the invocation's request ID. Every transition
// writes its actor onto the record in the same conditional write, and the audit trail copies
// it from there.
type Actor struct {
	Function  string
	Version   string
	RequestID string
}

// String returns "<function>:<version>/<request ID>", or "" for the zero Actor.
func (a Actor) String() string {
	if a == (Actor{}) {
		return ""
	}
	return a.Function + ":" + a.Version + "/" + a.RequestID
}

// ParseActor is the inverse of Actor.String. A string without the separators is taken as a
// function name alone.
func ParseActor(s string) Actor {
	fn, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Actor{Function: s}
	}
	version, id, _ := strings.Cut(rest, "/")
	return Actor{Function: fn, Version: version, RequestID: id}
}
