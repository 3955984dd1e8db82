package auditor

import (
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/auditfixture"
	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// chainOf writes the lifecycle of one notification through the handler and returns its entries.
func chainOf(t *testing.T) []auditlog.Entry {
	t.Helper()
	db := auditfixture.NewTable()
	write(t, db, "req-1", auditfixture.LifecycleRecords("k1", "evt-1", "01JA")...)
	es := stored(t, db)
	if p := Verify(es); len(p) != 0 {
		t.Fatalf("intact chain: %v", p)
	}
	return es
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func(t *testing.T, es []auditlog.Entry) []auditlog.Entry
		seq     string
		problem string
	}{
		{
			name: "edited entry",
			tamper: func(_ *testing.T, es []auditlog.Entry) []auditlog.Entry {
				es[2].Reason = "RECONCILED_ACCEPTED"
				return es
			},
			seq: "k1#0000000003", problem: "hash does not match the entry's content",
		},
		{
			name: "edited entry with its hash recomputed",
			tamper: func(t *testing.T, es []auditlog.Entry) []auditlog.Entry {
				es[2].ProviderMessageID = "other"
				es[2] = relink(t, es[2], es[2].PrevHash)
				return es
			},
			seq: "k1#0000000004", problem: "prev_hash does not match the hash of seq k1#0000000003",
		},
		{
			name:   "deleted entry",
			tamper: func(_ *testing.T, es []auditlog.Entry) []auditlog.Entry { return append(es[:1:1], es[2:]...) },
			seq:    "k1#0000000003", problem: "version 2 missing after seq k1#0000000001",
		},
		{
			name:   "deleted first entry",
			tamper: func(_ *testing.T, es []auditlog.Entry) []auditlog.Entry { return es[1:] },
			seq:    "k1#0000000002", problem: "chain starts at version 2: version 1 missing",
		},
		{
			name:   "deleted last entry before the purge",
			tamper: func(_ *testing.T, es []auditlog.Entry) []auditlog.Entry { return append(es[:3:3], es[4]) },
			seq:    "k1#0000000004#purged", problem: "version 4 missing after seq k1#0000000003",
		},
		{
			name: "reordered: two entries' contents swapped under their keys",
			tamper: func(_ *testing.T, es []auditlog.Entry) []auditlog.Entry {
				es[1].Seq, es[2].Seq = es[2].Seq, es[1].Seq
				return es
			},
			seq: "k1#0000000002", problem: "hash does not match",
		},
		{
			name: "reordered: swapped, renumbered and every hash recomputed",
			tamper: func(t *testing.T, es []auditlog.Entry) []auditlog.Entry {
				a, b := es[1], es[2]
				a.Seq, a.Version, b.Seq, b.Version = es[2].Seq, es[2].Version, es[1].Seq, es[1].Version
				out := []auditlog.Entry{es[0], b, a, es[3], es[4]}
				for i := 1; i < len(out); i++ {
					out[i] = relink(t, out[i], out[i-1].Hash)
				}
				return out
			},
			seq: "k1#0000000002", problem: "from_state dispatching does not follow to_state accepted",
		},
		{
			name: "entry after the purge",
			tamper: func(t *testing.T, es []auditlog.Entry) []auditlog.Entry {
				extra := es[3]
				extra.Seq, extra.Version = "k1#0000000005", 5
				return append(es, relink(t, extra, es[4].Hash))
			},
			seq: "k1#0000000005", problem: "entry after the purge",
		},
		{
			name: "stray attribute",
			tamper: func(_ *testing.T, es []auditlog.Entry) []auditlog.Entry {
				es[0].Unexpected = []string{"sealed"}
				return es
			},
			seq: "k1#0000000001", problem: "attributes outside the allow-list: sealed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := tc.tamper(t, chainOf(t))
			p := Verify(es)
			if len(p) == 0 {
				t.Fatal("Verify found nothing")
			}
			if p[0].Seq != tc.seq || !strings.Contains(p[0].What, tc.problem) || p[0].NotificationID != "01JA" {
				t.Errorf("first problem = %s\nwant seq %s: %s", p[0], tc.seq, tc.problem)
			}
		})
	}
}

func relink(t *testing.T, e auditlog.Entry, prev string) auditlog.Entry {
	t.Helper()
	e, err := auditlog.Link(e, prev)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
