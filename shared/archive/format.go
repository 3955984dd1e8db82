// Package archive is the archive step of the digest function and the archive's format: once a
// period's signed digest is written, its entries are written to an S3 bucket under Object
// Lock (compliance mode, default retention = the audit retention) as gzip-compressed JSON
// Lines objects, with a signed manifest chained to the period's digest, and an archive item
// records the period in the audit table. Entries then leave the table by TTL (drop_after)
// after the hot window; the digests and archive items stay the whole retention. The auditor's
// side (reading and checking the archive) is package auditor's.
//
// # Objects
//
// A period's entries, in the canonical order of its digest's tree (event ID, then seq,
// bytewise: audit.ManifestLine.Key), one audit.EntryJSON object per line ("\n"-terminated,
// UTF-8), gzip-compressed (no name, no time: the same entries give the same bytes), cut into
// parts of about PartBytes of JSON each, so that every part of a period that has more than one
// is well above S3's 128 KB minimum billable size. Keys:
//
//	<prefix>/<period_start>/part-00000.jsonl.gz   (period_start in RFC 3339, UTC)
//	<prefix>/<period_start>/manifest.json
//
// A period with no entries has no part, only its manifest.
//
// # Manifest
//
// manifest.json (Manifest) names the period, its digest (the digest's signature, count and
// tree root: the chain to the signed digests), and each part in order with its key, SHA-256,
// size, number of entries and first and last entry keys; it is signed with the digest key
// over the SHA-256 of CanonicalManifest. A part replaced, dropped, added or reordered no
// longer matches the signed manifest; and the entries of all parts, in order, must rebuild
// the tree root its digest signs.
package archive

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// ManifestFormat names the format of a manifest and of its canonical encoding's first line.
const ManifestFormat = "resetnotify-audit-archive-v1"

// DefaultPartBytes is the JSON size at which a period's entries are cut into another part:
// 8 MiB of JSON is about 1 MB compressed, so a part is rarely near the 128 KB minimum.
const DefaultPartBytes = 8 << 20

// Prefix is the key prefix of the archive's objects.
const Prefix = "audit"

// PeriodPrefix returns the key prefix of the period starting at start.
func PeriodPrefix(start time.Time) string {
	return Prefix + "/" + tables.FormatTime(start.UTC()) + "/"
}

// ManifestKey returns the key of the manifest of the period starting at start.
func ManifestKey(start time.Time) string { return PeriodPrefix(start) + "manifest.json" }

// PartKey returns the key of part n of the period starting at start.
func PartKey(start time.Time, n int) string {
	return fmt.Sprintf("%spart-%05d.jsonl.gz", PeriodPrefix(start), n)
}

// Part is one object of a period: its key, its bytes (gzip), and what the manifest says of it.
type Part struct {
	Ref  ObjectRef
	Body []byte
}

// ObjectRef is what a manifest holds of one part.
type ObjectRef struct {
	Key     string `json:"key"`
	SHA256  string `json:"sha256"`
	Bytes   int64  `json:"bytes"`
	Entries int64  `json:"entries"`
	// First and Last are the keys (audit.ManifestLine.Key, "<event_id>\x00<seq>") of the
	// part's first and last entries, so a reader looking for one event opens only the parts
	// whose span holds it.
	First string `json:"first"`
	Last  string `json:"last"`
}

// Manifest is a period's archive manifest (manifest.json).
type Manifest struct {
	Format      string    `json:"format"`
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	// Count, TreeRoot and DigestSignature are the period's signed digest's: the manifest is
	// chained to it.
	Count           int64       `json:"count"`
	TreeRoot        string      `json:"tree_root"`
	DigestSignature string      `json:"digest_signature"`
	Objects         []ObjectRef `json:"objects"`
	KeyID           string      `json:"key_id"`
	Algorithm       string      `json:"algorithm"`
	SignedAt        time.Time   `json:"signed_at"`
	// Signature is the base64 DER ECDSA signature of SHA-256(CanonicalManifest), by the digest
	// key.
	Signature string `json:"signature"`
}

// Period names the manifest's period as audit.PeriodName does.
func (m Manifest) Period() string { return auditlog.PeriodName(m.PeriodStart, m.PeriodEnd) }

// CanonicalManifest returns what a manifest's signature covers: the line ManifestFormat, then
// "<name>:<length>:<value>" lines: period_start period_end count tree_root digest_signature
// key_id algorithm signed_at objects, then per object key sha256 bytes entries first last.
func CanonicalManifest(m Manifest) []byte {
	var b bytes.Buffer
	b.WriteString(ManifestFormat + "\n")
	line := func(name, v string) { fmt.Fprintf(&b, "%s:%d:%s\n", name, len(v), v) }
	line("period_start", tables.FormatTime(m.PeriodStart))
	line("period_end", tables.FormatTime(m.PeriodEnd))
	line("count", strconv.FormatInt(m.Count, 10))
	line("tree_root", m.TreeRoot)
	line("digest_signature", m.DigestSignature)
	line("key_id", m.KeyID)
	line("algorithm", m.Algorithm)
	line("signed_at", tables.FormatTime(m.SignedAt))
	line("objects", strconv.Itoa(len(m.Objects)))
	for _, o := range m.Objects {
		line("key", o.Key)
		line("sha256", o.SHA256)
		line("bytes", strconv.FormatInt(o.Bytes, 10))
		line("entries", strconv.FormatInt(o.Entries, 10))
		line("first", o.First)
		line("last", o.Last)
	}
	return b.Bytes()
}

// ManifestSum returns SHA-256(CanonicalManifest(m)): what the signature is over.
func ManifestSum(m Manifest) []byte {
	sum := sha256.Sum256(CanonicalManifest(m))
	return sum[:]
}

// Parts returns the parts of the period starting at start holding entries, which must be in
// canonical order (audit.SortCanonical): each about partBytes of JSON Lines, gzip-compressed.
func Parts(start time.Time, entries []auditlog.Entry, partBytes int) ([]Part, error) {
	if partBytes <= 0 {
		partBytes = DefaultPartBytes
	}
	var out []Part
	var raw bytes.Buffer
	var first, last string
	var n int64
	flush := func() error {
		if n == 0 {
			return nil
		}
		body, err := gzipBytes(raw.Bytes())
		if err != nil {
			return fmt.Errorf("archive.parts %s: %w", tables.FormatTime(start), err)
		}
		sum := sha256.Sum256(body)
		out = append(out, Part{Body: body, Ref: ObjectRef{Key: PartKey(start, len(out)), SHA256: hex.EncodeToString(sum[:]),
			Bytes: int64(len(body)), Entries: n, First: first, Last: last}})
		raw.Reset()
		n = 0
		return nil
	}
	for _, e := range entries {
		if n == 0 {
			first = auditlog.LineOf(e).Key()
		}
		last = auditlog.LineOf(e).Key()
		raw.Write(auditlog.EntryJSON(e))
		raw.WriteByte('\n')
		n++
		if raw.Len() >= partBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	return out, flush()
}

// gzipBytes compresses b with no name and no modification time, so equal input gives equal
// output.
func gzipBytes(b []byte) ([]byte, error) {
	var z bytes.Buffer
	gz, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := gz.Write(b); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}
