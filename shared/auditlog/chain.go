package auditlog

import (
	"sort"
)

// Chain is the entries of one notification in chain order: by seq, so by version, a purge
// last.
type Chain struct {
	NotificationID string
	Entries        []Entry
}

// Chains groups entries by notification and orders each group in chain order. Chains are
// ordered by the time of their first entry, then by notification ID.
func Chains(entries []Entry) []Chain {
	byID := map[string][]Entry{}
	var ids []string
	for _, e := range entries {
		if _, ok := byID[e.NotificationID]; !ok {
			ids = append(ids, e.NotificationID)
		}
		byID[e.NotificationID] = append(byID[e.NotificationID], e)
	}
	out := make([]Chain, 0, len(ids))
	for _, id := range ids {
		es := byID[id]
		sort.SliceStable(es, func(i, j int) bool { return chainLess(es[i], es[j]) })
		out = append(out, Chain{NotificationID: id, Entries: es})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Entries[0].At, out[j].Entries[0].At
		if !a.Equal(b) {
			return a.Before(b)
		}
		return out[i].NotificationID < out[j].NotificationID
	})
	return out
}

// chainLess orders a chain by seq, the items' keys: zero-padded versions sort in order and a
// purge's suffix sorts after its version. Ordering by key rather than by the version
// attribute means an edited version shows as an edit instead of silently reordering.
func chainLess(a, b Entry) bool { return a.Seq < b.Seq }

// Sorted returns entries in timeline order: chain by chain, as Chains orders them.
func Sorted(entries []Entry) []Entry {
	out := make([]Entry, 0, len(entries))
	for _, c := range Chains(entries) {
		out = append(out, c.Entries...)
	}
	return out
}
