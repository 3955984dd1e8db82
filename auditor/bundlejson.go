package auditor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// Record types of a bundle file. An entry's object has no "type": it is the entry's columns
// under their attribute names, exactly as `auditctl export` has always written them.
const (
	recordRange  = "range"
	recordDigest = "digest"
)

// rangeJSON is the first record of a bundle file.
type rangeJSON struct {
	Type string    `json:"type"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// digestJSON is a digest as a bundle file holds it: every signed field, a version 1 digest's
// manifest as [event_id, seq, notification_id, hash] rows, and the signature. A record
// without digest_version is a version 1 digest (files written before version 2).
type digestJSON struct {
	Type            string      `json:"type"`
	Version         int         `json:"digest_version,omitempty"`
	PeriodStart     time.Time   `json:"period_start"`
	PeriodEnd       time.Time   `json:"period_end"`
	Count           int64       `json:"count"`
	TreeRoot        string      `json:"tree_root,omitempty"`
	EntriesHash     string      `json:"entries_hash,omitempty"`
	PrevPeriodStart *time.Time  `json:"prev_period_start"`
	PrevSignature   string      `json:"prev_signature"`
	KeyID           string      `json:"key_id"`
	Algorithm       string      `json:"algorithm"`
	SignedAt        time.Time   `json:"signed_at"`
	RetainUntil     int64       `json:"retain_until"`
	Signature       string      `json:"signature"`
	Manifest        [][4]string `json:"manifest"`
}

func toDigestJSON(d auditlog.Digest) digestJSON {
	out := digestJSON{Type: recordDigest, PeriodStart: d.PeriodStart, PeriodEnd: d.PeriodEnd, Count: d.Count,
		EntriesHash: d.EntriesHash, TreeRoot: d.Root, PrevSignature: d.PrevSignature, KeyID: d.KeyID, Algorithm: d.Algorithm,
		SignedAt: d.SignedAt, RetainUntil: d.RetainUntil, Signature: d.Signature, Manifest: [][4]string{}}
	if d.Version != auditlog.DigestVersionManifest {
		out.Version = d.Version
	}
	if !d.PrevPeriodStart.IsZero() {
		p := d.PrevPeriodStart
		out.PrevPeriodStart = &p
	}
	for _, l := range d.Manifest {
		out.Manifest = append(out.Manifest, [4]string{l.EventID, l.Seq, l.NotificationID, l.Hash})
	}
	return out
}

func (j digestJSON) digest() auditlog.Digest {
	d := auditlog.Digest{PeriodStart: j.PeriodStart.UTC(), PeriodEnd: j.PeriodEnd.UTC(), Count: j.Count, EntriesHash: j.EntriesHash,
		PrevSignature: j.PrevSignature, KeyID: j.KeyID, Algorithm: j.Algorithm, SignedAt: j.SignedAt.UTC(),
		RetainUntil: j.RetainUntil, Signature: j.Signature, Version: j.Version, Root: j.TreeRoot}
	if d.Version == 0 {
		d.Version = auditlog.DigestVersionManifest
	}
	if j.PrevPeriodStart != nil {
		d.PrevPeriodStart = j.PrevPeriodStart.UTC()
	}
	for _, r := range j.Manifest {
		d.Manifest = append(d.Manifest, auditlog.ManifestLine{EventID: r[0], Seq: r[1], NotificationID: r[2], Hash: r[3]})
	}
	return d
}

// BundleRecords returns the records of b's file in order: the range, the digests, the entries.
func BundleRecords(b Bundle) [][]byte {
	out := make([][]byte, 0, 1+len(b.Digests)+len(b.Entries))
	r, _ := json.Marshal(rangeJSON{Type: recordRange, From: b.From, To: b.To}) // plain struct
	out = append(out, r)
	for _, d := range b.Digests {
		j, _ := json.Marshal(toDigestJSON(d)) // plain struct
		out = append(out, j)
	}
	for _, e := range b.Entries {
		out = append(out, auditlog.EntryJSON(e))
	}
	return out
}

// ReadBundle reads a bundle file: JSON lines, or one JSON array of the same records. Without
// a range record, the range is the span of the digests and entries it holds.
func ReadBundle(r io.Reader) (Bundle, error) {
	br := bufio.NewReader(r)
	var records []json.RawMessage
	if first, err := peekNonSpace(br); err == nil && first == '[' {
		if err := json.NewDecoder(br).Decode(&records); err != nil {
			return Bundle{}, fmt.Errorf("auditor.read bundle: %w", err)
		}
	} else {
		sc := bufio.NewScanner(br)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				records = append(records, append(json.RawMessage(nil), line...))
			}
		}
		if err := sc.Err(); err != nil {
			return Bundle{}, fmt.Errorf("auditor.read bundle: %w", err)
		}
	}
	var b Bundle
	hasRange := false
	for i, raw := range records {
		var kind struct{ Type string }
		if err := json.Unmarshal(raw, &kind); err != nil {
			return Bundle{}, fmt.Errorf("auditor.read bundle: record %d: %w", i+1, err)
		}
		switch kind.Type {
		case recordRange:
			var rj rangeJSON
			if err := json.Unmarshal(raw, &rj); err != nil {
				return Bundle{}, fmt.Errorf("auditor.read bundle: record %d: %w", i+1, err)
			}
			b.From, b.To, hasRange = rj.From.UTC(), rj.To.UTC(), true
		case recordDigest:
			var dj digestJSON
			if err := json.Unmarshal(raw, &dj); err != nil {
				return Bundle{}, fmt.Errorf("auditor.read bundle: record %d: %w", i+1, err)
			}
			b.Digests = append(b.Digests, dj.digest())
		case "":
			e, err := auditlog.EntryFromJSON(raw)
			if err != nil {
				return Bundle{}, fmt.Errorf("auditor.read bundle: record %d: %w", i+1, err)
			}
			b.Entries = append(b.Entries, e)
		default:
			return Bundle{}, fmt.Errorf("auditor.read bundle: record %d: unknown type %s", i+1, strconv.Quote(kind.Type))
		}
	}
	if !hasRange {
		b.From, b.To = spanOf(b)
	}
	b.Entries = auditlog.Sorted(b.Entries)
	return b, nil
}

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; ; i++ {
		p, err := br.Peek(i)
		if err != nil {
			return 0, err
		}
		if c := p[i-1]; c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return c, nil
		}
	}
}

// spanOf returns the span of the digests' periods and the entries' written_at.
func spanOf(b Bundle) (from, to time.Time) {
	add := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if from.IsZero() || t.Before(from) {
			from = t
		}
		if to.IsZero() || !t.Before(to) {
			to = t.Add(time.Nanosecond)
		}
	}
	for _, d := range b.Digests {
		add(d.PeriodStart)
		add(d.PeriodEnd.Add(-time.Nanosecond))
	}
	for _, e := range b.Entries {
		add(e.WrittenAt)
	}
	return from, to
}
