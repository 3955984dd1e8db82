package auditor

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// checkFixture is a chain of three entries of one notification written one per minute from
// start, and the signed digests (of one version) of those three one-minute periods.
type checkFixture struct {
	key     *digest.LocalSigner
	start   time.Time
	entries []auditlog.Entry
	digests []auditlog.Digest
	version int
	strict  bool
}

func newCheckFixture(t *testing.T, version int) *checkFixture {
	t.Helper()
	k, _, err := digest.NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &checkFixture{key: &digest.LocalSigner{Key: k}, start: time.Date(2030, 3, 1, 9, 30, 0, 0, time.UTC), version: version}
	prev := auditlog.GenesisHash
	states := []string{"", "accepted", "dispatching", "sent"}
	for v := int64(1); v <= 3; v++ {
		at := f.start.Add(time.Duration(v-1) * time.Minute)
		e := auditlog.Entry{EventID: "evt-c", Seq: auditlog.Seq("k", v), NotificationID: "01C", Version: v, At: at, Day: at.Format(auditlog.DayLayout),
			FromState: notifyState(states[v-1]), ToState: notifyState(states[v]), Reason: "R",
			WrittenAt: at.Add(10 * time.Second), WriteDay: at.Format(auditlog.DayLayout)}
		e, err := auditlog.Link(e, prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
		f.entries = append(f.entries, e)
	}
	for i := range 3 {
		s := f.start.Add(time.Duration(i) * time.Minute)
		d := auditlog.Digest{Version: version, PeriodStart: s, PeriodEnd: s.Add(time.Minute), Manifest: []auditlog.ManifestLine{auditlog.LineOf(f.entries[i])}}
		if i > 0 {
			d.PrevPeriodStart, d.PrevSignature = f.digests[i-1].PeriodStart, f.digests[i-1].Signature
		}
		f.digests = append(f.digests, sign(t, f.key, d))
	}
	return f
}

// sign returns d signed by s, as the digest step signs: a version 1 digest of its manifest
// when d.Version is 1, else the version 2 digest of the entries its manifest names.
func sign(t *testing.T, s digest.Signer, d auditlog.Digest) auditlog.Digest {
	t.Helper()
	d.KeyID, d.Algorithm = s.KeyID(), digest.SigningAlgorithm
	if d.Version == auditlog.DigestVersionManifest {
		d.Count, d.EntriesHash = int64(len(d.Manifest)), auditlog.ManifestHash(d.Manifest)
	} else {
		var tree auditlog.PeriodTree
		for _, l := range d.Manifest {
			tree.Add(l)
		}
		d.Version, d.Count, d.Root, d.Manifest = auditlog.DigestVersionTree, tree.Size(), tree.Root(), nil
	}
	sig, err := s.Sign(context.Background(), auditlog.DigestSum(d))
	if err != nil {
		t.Fatal(err)
	}
	d.Signature = base64.StdEncoding.EncodeToString(sig)
	return d
}

// check checks b at now with a 10-second grace and a 2-minute lag bound: a period's digest
// is late from 10 s after its end and missing from 3 min 10 s after it (the schedule is 1
// minute), or from 10 s when f.strict.
func (f *checkFixture) check(b Bundle, now time.Time) Report {
	return Check(b, CheckOptions{PublicKey: &f.key.Key.PublicKey, Now: now, Grace: 10 * time.Second, Period: time.Minute,
		LagBound: 2 * time.Minute, Strict: f.strict})
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		// change returns the bundle to check and the time to check it at.
		change func(t *testing.T, f *checkFixture) (Bundle, time.Time)
		want   string // in the first problem; "" means OK
		open   int
		// late is in the first late warning; "" means none.
		late string
		// only is the digest version the case applies to (0: both).
		only int
	}{
		{
			name: "intact",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests, Entries: f.entries}, f.start.Add(3*time.Minute + 11*time.Second)
			},
		},
		{
			name: "last period still open",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests[:2], Entries: f.entries}, f.start.Add(3*time.Minute + 5*time.Second)
			},
			open: 1,
		},
		{
			name: "last digest late: past the grace, within the lag bound",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests[:2], Entries: f.entries}, f.start.Add(3*time.Minute + 11*time.Second)
			},
			late: "period 2030-03-01T09:32:00Z to 2030-03-01T09:33:00Z: digest late: no signed digest closes these periods yet, but they ended less than the grace (10s) plus the digest schedule (1m0s) plus the lag bound (2m0s) ago: the digest step is behind, which is not a tamper finding (1 entries",
		},
		{
			name: "last digest late just before the bound",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests[:2], Entries: f.entries}, f.start.Add(6*time.Minute + 9*time.Second)
			},
			late: "digest late",
		},
		{
			name: "last digest missing past the bound",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests[:2], Entries: f.entries}, f.start.Add(6*time.Minute + 11*time.Second)
			},
			want: "period 2030-03-01T09:32:00Z to 2030-03-01T09:33:00Z: digest missing: these periods ended more than 10s ago but no signed digest closes them (1 entries",
		},
		{
			name: "export file without its last digest: no lag allowance",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				f.strict = true
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests[:2], Entries: f.entries[:2]}, f.start.Add(3*time.Minute + 11*time.Second)
			},
			want: "digest missing: the file holds no signed digest for these periods, which ended more than 10s ago, so it does not cover the range asked for",
		},
		{
			name: "digest re-signed to skip its predecessor",
			change: func(t *testing.T, f *checkFixture) (Bundle, time.Time) {
				d := f.digests[2]
				d.PrevPeriodStart, d.PrevSignature = f.digests[0].PeriodStart, f.digests[0].Signature
				ds := []auditlog.Digest{f.digests[0], f.digests[1], sign(t, f.key, d)}
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: ds, Entries: f.entries}, f.start.Add(4 * time.Minute)
			},
			want: "digest out of order: it does not name the digest of 2030-03-01T09:31:00Z to 2030-03-01T09:32:00Z",
		},
		{
			name: "predecessor gone",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests[1:], Entries: f.entries}, f.start.Add(4 * time.Minute)
			},
			want: "digest missing: the digest of the period starting 2030-03-01T09:30:00Z",
		},
		{
			name: "manifest swapped under a valid signature",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				ds := append([]auditlog.Digest(nil), f.digests...)
				ds[1].Manifest = ds[0].Manifest
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: ds, Entries: f.entries}, f.start.Add(4 * time.Minute)
			},
			want: "digest altered: the entries it lists are not the ones its signed entries hash and count name",
			only: auditlog.DigestVersionManifest,
		},
		{
			name: "tree root swapped",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				ds := append([]auditlog.Digest(nil), f.digests...)
				ds[1].Root = ds[0].Root
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: ds, Entries: f.entries}, f.start.Add(4 * time.Minute)
			},
			want: "digest forged or altered: its signature does not verify with the public key",
			only: auditlog.DigestVersionTree,
		},
		{
			name: "digest signed by another key",
			change: func(t *testing.T, f *checkFixture) (Bundle, time.Time) {
				k, _, err := digest.NewLocalKey()
				if err != nil {
					t.Fatal(err)
				}
				ds := append([]auditlog.Digest(nil), f.digests...)
				d := ds[2]
				d.Manifest = []auditlog.ManifestLine{auditlog.LineOf(f.entries[2])}
				ds[2] = sign(t, &digest.LocalSigner{Key: k}, d)
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: ds, Entries: f.entries}, f.start.Add(4 * time.Minute)
			},
			want: "period 2030-03-01T09:32:00Z to 2030-03-01T09:33:00Z: digest forged or altered",
		},
		{
			name: "entry deleted from a closed period",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests, Entries: f.entries[:2]}, f.start.Add(4 * time.Minute)
			},
			want: "period 2030-03-01T09:32:00Z to 2030-03-01T09:33:00Z: entries deleted: the signed digest of this period covers 1 entries, only 0 written in it are left (1 deleted)",
			only: auditlog.DigestVersionTree,
		},
		{
			name: "entry added to a closed period",
			change: func(t *testing.T, f *checkFixture) (Bundle, time.Time) {
				e := f.entries[2]
				e.Seq, e.Version, e.FromState, e.ToState = auditlog.Seq("k", 4), 4, e.ToState, "delivered"
				e, err := auditlog.Link(e, f.entries[2].Hash)
				if err != nil {
					t.Fatal(err)
				}
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests, Entries: append(append([]auditlog.Entry(nil), f.entries...), e)}, f.start.Add(4 * time.Minute)
			},
			want: "period 2030-03-01T09:32:00Z to 2030-03-01T09:33:00Z: entries added: 2 entries are written in this period, its signed digest covers 1 (1 added after it was signed)",
			only: auditlog.DigestVersionTree,
		},
		{
			name: "chain rewritten consistently",
			change: func(t *testing.T, f *checkFixture) (Bundle, time.Time) {
				es := append([]auditlog.Entry(nil), f.entries...)
				prev := auditlog.GenesisHash
				for i := range es {
					es[i].DestinationFP = "ffffffffffffffff"
					var err error
					if es[i], err = auditlog.Link(es[i], prev); err != nil {
						t.Fatal(err)
					}
					prev = es[i].Hash
				}
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests, Entries: es}, f.start.Add(4 * time.Minute)
			},
			want: "period 2030-03-01T09:30:00Z to 2030-03-01T09:31:00Z: entries changed: the 1 entries written in this period are not the ones its signed digest covers (the Merkle root differs)",
			only: auditlog.DigestVersionTree,
		},
		{
			name: "chain rewritten consistently (manifest)",
			change: func(t *testing.T, f *checkFixture) (Bundle, time.Time) {
				es := append([]auditlog.Entry(nil), f.entries...)
				prev := auditlog.GenesisHash
				for i := range es {
					es[i].DestinationFP = "ffffffffffffffff"
					var err error
					if es[i], err = auditlog.Link(es[i], prev); err != nil {
						t.Fatal(err)
					}
					prev = es[i].Hash
				}
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests, Entries: es}, f.start.Add(4 * time.Minute)
			},
			want: "notification 01C: whole chain rewritten: all 3 entries of this notification (event evt-c) that signed digests cover differ from what was signed",
			only: auditlog.DigestVersionManifest,
		},
		{
			name: "whole chain deleted (manifest)",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests}, f.start.Add(4 * time.Minute)
			},
			want: "notification 01C: whole chain deleted: the 3 entries of this notification (event evt-c, idempotency key k) that signed digests list are all gone from the audit table",
			only: auditlog.DigestVersionManifest,
		},
		{
			name: "whole chain deleted (tree)",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests}, f.start.Add(4 * time.Minute)
			},
			want: "period 2030-03-01T09:30:00Z to 2030-03-01T09:31:00Z: entries deleted: the signed digest of this period covers 1 entries, only 0 written in it are left (1 deleted)",
			only: auditlog.DigestVersionTree,
		},
		{
			name: "entry written before digests existed",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				es := append([]auditlog.Entry(nil), f.entries...)
				es[0].WrittenAt, es[0].WriteDay = time.Time{}, ""
				return Bundle{From: f.start, To: f.start.Add(time.Minute), Entries: es[:1]}, f.start.Add(4 * time.Minute)
			},
			want: "1 entries have no written_at",
			late: "digest late",
		},
	}
	for _, version := range []int{auditlog.DigestVersionManifest, auditlog.DigestVersionTree} {
		for _, tc := range tests {
			if tc.only != 0 && tc.only != version {
				continue
			}
			t.Run(fmt.Sprintf("v%d %s", version, tc.name), func(t *testing.T) {
				f := newCheckFixture(t, version)
				r := f.check(tc.change(t, f))
				checkReport(t, r, tc.want, tc.late, tc.open)
			})
		}
	}
}

// checkReport fails t unless r is OK when want is "" (else its first problem says want),
// its first late warning says late (none when ""), and it counts open entries.
func checkReport(t *testing.T, r Report, want, late string, open int) {
	t.Helper()
	if r.Open != open {
		t.Errorf("open = %d, want %d", r.Open, open)
	}
	switch {
	case late == "" && len(r.Late) > 0:
		t.Errorf("late warnings %v, want none", r.Late)
	case late != "" && (len(r.Late) == 0 || !strings.Contains(r.Late[0].String(), late)):
		t.Errorf("late warnings %v, want the first to say %q", r.Late, late)
	}
	if want == "" {
		if !r.OK() {
			t.Errorf("problems: %v", r.Problems)
		}
		return
	}
	if r.OK() || !strings.Contains(r.Problems[0].String(), want) {
		t.Errorf("problems %v\nwant the first to say %q", r.Problems, want)
	}
}

func notifyState(s string) notify.State { return notify.State(s) }
