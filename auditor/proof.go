package auditor

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"slices"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// EntryProof ties one entry to the signed digest of the period it was written in. For a
// version 2 digest it is the entry's leaf index and RFC 6962 audit path in the digest's tree
// of TreeSize leaves; for a version 1 digest the digest's manifest lists the entry and Path is
// empty. Unproven, when set, says why the entry has no proof (its period is still open, or its
// period's entries no longer match the signed digest).
type EntryProof struct {
	Entry       auditlog.Entry
	PeriodStart time.Time
	LeafIndex   uint64
	TreeSize    int64
	Path        [][]byte
	Unproven    string
}

// Proof is what `auditctl evidence --proof` writes and `auditctl verify --proof` checks with
// nothing but the public key: every entry of one event, each with its proof, and the signed
// digests the proofs lead to.
type Proof struct {
	EventID string
	Digests []auditlog.Digest
	Entries []EntryProof
}

// BuildProof proves each of entries (one event's, Reader.Timeline) against the digests ds
// (DigestsCovering of their written_at span). For each version 2 digest that covers one of the
// entries it reads the whole period's entries once (WrittenIn: one query page per 1 MB of the
// index's projection, about 100 bytes of memory per entry) to rebuild the tree; when that tree
// is not the signed one, the period's entries are left unproven.
func BuildProof(ctx context.Context, db auditlog.QueryAPI, table, eventID string, entries []auditlog.Entry, ds []auditlog.Digest) (Proof, error) {
	return BuildProofTrail(ctx, &Trail{Reader: &auditlog.Reader{DB: db, Table: table}}, eventID, entries, ds)
}

// BuildProofTrail is BuildProof reading each period from t: the archive for a cold period.
func BuildProofTrail(ctx context.Context, t *Trail, eventID string, entries []auditlog.Entry, ds []auditlog.Digest) (Proof, error) {
	p := Proof{EventID: eventID}
	trees := map[time.Time]*auditlog.PeriodTree{}
	for _, e := range auditlog.Sorted(entries) {
		ep := EntryProof{Entry: e, Unproven: "its period has no digest yet"}
		d := digestOf(ds, e.WrittenAt)
		switch {
		case d == nil:
		case d.Version == auditlog.DigestVersionManifest:
			ep.PeriodStart, ep.Unproven = d.PeriodStart, ""
			if !slices.Contains(d.Manifest, auditlog.LineOf(e)) {
				ep.Unproven = "the signed digest of its period does not list it as it is now"
			}
		default:
			tree, err := periodTree(ctx, t, *d, trees)
			if err != nil {
				return Proof{}, fmt.Errorf("auditor.proof %s: %w", eventID, err)
			}
			ep.PeriodStart, ep.TreeSize, ep.Unproven = d.PeriodStart, d.Count, ""
			if tree == nil {
				ep.Unproven = "the entries written in its period no longer match its signed digest"
			} else if i, ok := tree.Index(auditlog.LineOf(e).Key()); ok {
				ep.LeafIndex = i
			} else {
				ep.Unproven = "the signed digest of its period does not hold it"
			}
		}
		if d != nil && !slices.ContainsFunc(p.Digests, func(x auditlog.Digest) bool { return x.PeriodStart.Equal(d.PeriodStart) }) {
			p.Digests = append(p.Digests, *d)
		}
		p.Entries = append(p.Entries, ep)
	}
	return p, addPaths(&p, trees)
}

// digestOf returns the digest whose period holds t, or nil.
func digestOf(ds []auditlog.Digest, t time.Time) *auditlog.Digest {
	for i := range ds {
		if !t.IsZero() && !t.Before(ds[i].PeriodStart) && t.Before(ds[i].PeriodEnd) {
			return &ds[i]
		}
	}
	return nil
}

// periodTree returns the tree of d's period, read once and kept in trees; nil when it is not
// the tree d signs.
func periodTree(ctx context.Context, src *Trail, d auditlog.Digest, trees map[time.Time]*auditlog.PeriodTree) (*auditlog.PeriodTree, error) {
	if t, ok := trees[d.PeriodStart]; ok {
		return t, nil
	}
	t := &auditlog.PeriodTree{}
	for e, err := range src.WrittenIn(ctx, d.PeriodStart, d.PeriodEnd) {
		if err != nil {
			return nil, err
		}
		t.Add(auditlog.LineOf(e))
	}
	if t.Size() != d.Count || t.Root() != d.Root {
		t = nil
	}
	trees[d.PeriodStart] = t
	return t, nil
}

// addPaths computes the audit paths of p's tree-proved entries, one pass per tree.
func addPaths(p *Proof, trees map[time.Time]*auditlog.PeriodTree) error {
	want := map[time.Time][]uint64{}
	for _, ep := range p.Entries {
		if ep.Unproven == "" && ep.TreeSize > 0 {
			want[ep.PeriodStart] = append(want[ep.PeriodStart], ep.LeafIndex)
		}
	}
	paths := map[time.Time]map[uint64][][]byte{}
	for start, idx := range want {
		ps, err := trees[start].InclusionPaths(idx)
		if err != nil {
			return fmt.Errorf("auditor.proof %s: %w", p.EventID, err)
		}
		paths[start] = ps
	}
	for i := range p.Entries {
		ep := &p.Entries[i]
		if ep.Unproven == "" && ep.TreeSize > 0 {
			ep.Path = paths[ep.PeriodStart][ep.LeafIndex]
		}
	}
	return nil
}

// ProofReport is what CheckProof found.
type ProofReport struct {
	EventID string `json:"event_id"`
	Entries int    `json:"entries"`
	// Proven counts the entries tied to a valid signed digest, whose content still hashes to
	// their hash.
	Proven int `json:"proven"`
	// Digests names the periods of the valid digests the proofs lead to.
	Digests  []string  `json:"digests"`
	Problems []Problem `json:"problems"`
}

// OK reports whether every entry is proven and nothing is wrong.
func (r ProofReport) OK() bool { return len(r.Problems) == 0 && r.Proven == r.Entries && r.Entries > 0 }

// CheckProof checks a proof with the public key alone: each digest's signature (and a version
// 1 digest's manifest), each entry's content against its hash, its written_at against the
// period of the digest it cites, its inclusion in that digest (the audit path leads from its
// leaf to the signed root, or the signed manifest lists it), and the event's hash chains. It
// proves that the entries are in the signed trail, not that the event has no other entries:
// completeness is what verify of a range checks.
func CheckProof(p Proof, pub *ecdsa.PublicKey) ProofReport {
	r := ProofReport{EventID: p.EventID, Entries: len(p.Entries), Digests: []string{}}
	valid := map[time.Time]auditlog.Digest{}
	for _, d := range p.Digests {
		switch {
		case !VerifySignature(pub, d):
			r.Problems = append(r.Problems, digestProblem(d.Period(), "digest forged or altered: its signature does not verify with the public key"))
		case !ManifestIntact(d):
			r.Problems = append(r.Problems, digestProblem(d.Period(), "digest altered: it is not the one its signature covers"))
		default:
			valid[d.PeriodStart] = d
			r.Digests = append(r.Digests, d.Period())
		}
	}
	var entries []auditlog.Entry
	for _, ep := range p.Entries {
		entries = append(entries, ep.Entry)
		if what := proofProblem(ep, valid); what != "" {
			r.Problems = append(r.Problems, Problem{NotificationID: ep.Entry.NotificationID, Seq: ep.Entry.Seq, What: what})
			continue
		}
		r.Proven++
	}
	r.Problems = append(r.Problems, Verify(entries)...)
	return r
}

// proofProblem says why ep does not prove its entry, or "" when it does.
func proofProblem(ep EntryProof, valid map[time.Time]auditlog.Digest) string {
	e := ep.Entry
	d, ok := valid[ep.PeriodStart]
	switch {
	case ep.Unproven != "":
		return "not proven: " + ep.Unproven
	case !contentIntact(e):
		return "entry edited: its content does not hash to its hash"
	case !ok:
		return fmt.Sprintf("not proven: the proof cites the digest of the period starting %s, which the file does not hold valid", ep.PeriodStart.UTC().Format(time.RFC3339))
	case e.WrittenAt.Before(d.PeriodStart) || !e.WrittenAt.Before(d.PeriodEnd):
		return fmt.Sprintf("not proven: its written_at is not in %s, the period of the digest the proof cites", d.Period())
	case d.Version == auditlog.DigestVersionManifest:
		if !slices.Contains(d.Manifest, auditlog.LineOf(e)) {
			return fmt.Sprintf("entry changed or added: the signed digest of %s does not list it", d.Period())
		}
		return ""
	case ep.TreeSize != d.Count:
		return fmt.Sprintf("not proven: the proof is for a tree of %d entries, the signed digest of %s has %d", ep.TreeSize, d.Period(), d.Count)
	}
	if err := VerifyInclusion(d, auditlog.LineOf(e), ep.LeafIndex, ep.Path); err != nil {
		return "entry or path changed: " + err.Error()
	}
	return ""
}
