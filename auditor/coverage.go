package auditor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
)

// DigestCoverage tells whether one notification's entries are covered by verified signed
// digests: a digest covers an entry when its signature verifies with the public key, it is
// well formed (a version 1 digest's manifest matches what it signed), and it holds the entry
// with the entry's current hash (listed in a version 1 manifest; in a version 2 digest's tree,
// as the entry's inclusion proof shows).
type DigestCoverage struct {
	// Checked is false when no public key was given, so nothing was verified.
	Checked bool `json:"checked"`
	Entries int  `json:"entries"`
	Covered int  `json:"covered"`
	// Open counts entries written in a period that has not closed yet.
	Open int `json:"open"`
	// Uncovered counts entries of closed periods that no verified digest closes.
	Uncovered int `json:"uncovered"`
	// Mismatched counts entries that a verified digest of their period does not list as they
	// are now: added or changed after the period closed.
	Mismatched int `json:"mismatched"`
	// Digests names the periods of the verified digests that cover the entries.
	Digests []string `json:"digests"`
	KeyID   string   `json:"key_id,omitempty"`
}

// AllCovered reports whether every entry is covered by a verified digest.
func (c DigestCoverage) AllCovered() bool { return c.Checked && c.Covered == c.Entries }

// Coverage returns the digest coverage of each notification among entries (by notification
// ID), checking the digests ds with o.PublicKey and, for version 2 digests, the entries'
// inclusion proofs in p (BuildProof; without it no entry of a version 2 period is covered).
func Coverage(entries []auditlog.Entry, ds []auditlog.Digest, o CheckOptions, p Proof) map[string]DigestCoverage {
	out := map[string]DigestCoverage{}
	period := o.Period
	if len(ds) > 0 {
		period = ds[len(ds)-1].PeriodEnd.Sub(ds[len(ds)-1].PeriodStart)
	}
	if period <= 0 {
		period = config.DefaultDigestPeriod
	}
	closedUntil := o.Now.Add(-o.Grace).Truncate(period)
	valid, included := digestChecks(ds, o, p)
	for _, e := range entries {
		c := out[e.NotificationID]
		c.Entries++
		c.Checked = o.PublicKey != nil
		if !c.Checked {
			out[e.NotificationID] = c
			continue
		}
		var covering *auditlog.Digest
		for i := range ds {
			if valid[i] && !e.WrittenAt.Before(ds[i].PeriodStart) && e.WrittenAt.Before(ds[i].PeriodEnd) {
				covering = &ds[i]
				break
			}
		}
		switch {
		case covering != nil && included(*covering, e) && contentIntact(e):
			c.Covered++
			c.KeyID = covering.KeyID
			if p := covering.Period(); !slices.Contains(c.Digests, p) {
				c.Digests = append(c.Digests, p)
			}
		case covering != nil:
			c.Mismatched++
		case !e.WrittenAt.IsZero() && !e.WrittenAt.Before(closedUntil):
			c.Open++
		default:
			c.Uncovered++
		}
		out[e.NotificationID] = c
	}
	return out
}

// digestChecks returns which of ds verify with o.PublicKey and are well formed, and a test of
// whether a valid digest holds an entry: its manifest lists it (version 1), or the entry's
// proof in p leads to the digest's signed root (version 2).
func digestChecks(ds []auditlog.Digest, o CheckOptions, p Proof) ([]bool, func(auditlog.Digest, auditlog.Entry) bool) {
	valid := make([]bool, len(ds))
	byStart := map[time.Time]auditlog.Digest{}
	for i := range ds {
		valid[i] = o.PublicKey != nil && VerifySignature(o.PublicKey, ds[i]) && ManifestIntact(ds[i])
		if valid[i] {
			byStart[ds[i].PeriodStart] = ds[i]
		}
	}
	proofs := map[string]EntryProof{}
	for _, ep := range p.Entries {
		proofs[auditlog.LineOf(ep.Entry).Key()] = ep
	}
	return valid, func(d auditlog.Digest, e auditlog.Entry) bool {
		if d.Version == auditlog.DigestVersionManifest {
			return slices.Contains(d.Manifest, auditlog.LineOf(e))
		}
		ep, ok := proofs[auditlog.LineOf(e).Key()]
		ep.Entry = e
		return ok && proofProblem(ep, byStart) == ""
	}
}

// contentIntact reports whether e's stored hash is the hash of its content.
func contentIntact(e auditlog.Entry) bool {
	h, err := auditlog.ComputeHash(e.PrevHash, e)
	return err == nil && h == e.Hash
}

// DigestsCovering returns, in period order, the digests whose periods overlap [from, to) and
// the digest just before the first of them.
func DigestsCovering(ctx context.Context, db auditlog.QueryAPI, table string, from, to time.Time) ([]auditlog.Digest, error) {
	var out []auditlog.Digest
	for d, err := range auditlog.Digests(ctx, db, table, time.Time{}, to, false) {
		if err != nil {
			return nil, fmt.Errorf("auditor.digests covering: %w", err)
		}
		out = append(out, d)
		if !d.PeriodEnd.After(from) {
			break
		}
	}
	slices.Reverse(out)
	return out, nil
}
