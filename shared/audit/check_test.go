package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// checkFixture is a chain of three entries of one notification written one per minute from
// start, and the signed digests of those three one-minute periods.
type checkFixture struct {
	key     *LocalSigner
	start   time.Time
	entries []Entry
	digests []Digest
}

func newCheckFixture(t *testing.T) *checkFixture {
	t.Helper()
	k, _, err := NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &checkFixture{key: &LocalSigner{Key: k}, start: time.Date(2030, 3, 1, 9, 30, 0, 0, time.UTC)}
	prev := GenesisHash
	states := []string{"", "accepted", "dispatching", "sent"}
	for v := int64(1); v <= 3; v++ {
		at := f.start.Add(time.Duration(v-1) * time.Minute)
		e := Entry{EventID: "evt-c", Seq: Seq("k", v), NotificationID: "01C", Version: v, At: at, Day: at.Format(DayLayout),
			FromState: notifyState(states[v-1]), ToState: notifyState(states[v]), Reason: "R",
			WrittenAt: at.Add(10 * time.Second), WriteDay: at.Format(DayLayout)}
		e, err := Link(e, prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
		f.entries = append(f.entries, e)
	}
	for i := range 3 {
		s := f.start.Add(time.Duration(i) * time.Minute)
		d := Digest{PeriodStart: s, PeriodEnd: s.Add(time.Minute), Manifest: []ManifestLine{lineOf(f.entries[i])}}
		if i > 0 {
			d.PrevPeriodStart, d.PrevSignature = f.digests[i-1].PeriodStart, f.digests[i-1].Signature
		}
		f.digests = append(f.digests, signed(t, f.key, d))
	}
	return f
}

func (f *checkFixture) check(b Bundle, now time.Time) Report {
	return Check(b, CheckOptions{PublicKey: &f.key.Key.PublicKey, Now: now, Grace: 10 * time.Second, Period: time.Minute})
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		// change returns the bundle to check and the time to check it at.
		change func(t *testing.T, f *checkFixture) (Bundle, time.Time)
		want   string // in the first problem; "" means OK
		open   int
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
			name: "last period closed without a digest",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: f.digests[:2], Entries: f.entries}, f.start.Add(3*time.Minute + 11*time.Second)
			},
			want: "digest missing: these periods ended more than 10s ago but no signed digest closes them (1 entries",
		},
		{
			name: "digest re-signed to skip its predecessor",
			change: func(t *testing.T, f *checkFixture) (Bundle, time.Time) {
				d := f.digests[2]
				d.PrevPeriodStart, d.PrevSignature = f.digests[0].PeriodStart, f.digests[0].Signature
				ds := []Digest{f.digests[0], f.digests[1], signed(t, f.key, d)}
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
				ds := append([]Digest(nil), f.digests...)
				ds[1].Manifest = ds[0].Manifest
				return Bundle{From: f.start, To: f.start.Add(3 * time.Minute), Digests: ds, Entries: f.entries}, f.start.Add(4 * time.Minute)
			},
			want: "digest altered: the entries it lists are not the ones its signed entries hash and count name",
		},
		{
			name: "entry written before digests existed",
			change: func(_ *testing.T, f *checkFixture) (Bundle, time.Time) {
				es := append([]Entry(nil), f.entries...)
				es[0].WrittenAt, es[0].WriteDay = time.Time{}, ""
				return Bundle{From: f.start, To: f.start.Add(time.Minute), Entries: es[:1]}, f.start.Add(4 * time.Minute)
			},
			want: "1 entries have no written_at",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newCheckFixture(t)
			r := f.check(tc.change(t, f))
			if r.Open != tc.open {
				t.Errorf("open = %d, want %d", r.Open, tc.open)
			}
			if tc.want == "" {
				if !r.OK() {
					t.Errorf("problems: %v", r.Problems)
				}
				return
			}
			if r.OK() || !strings.Contains(r.Problems[0].String(), tc.want) {
				t.Errorf("problems %v\nwant the first to say %q", r.Problems, tc.want)
			}
		})
	}
}

func notifyState(s string) notify.State { return notify.State(s) }
