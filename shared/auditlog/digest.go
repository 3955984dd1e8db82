package auditlog

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// digestHeader and digestHeaderV2 start the canonical encoding of a version 1 and a version 2
// digest; each names its encoding's version.
const (
	digestHeader   = "resetnotify-audit-digest-v1\n"
	digestHeaderV2 = "resetnotify-audit-digest-v2\n"
)

// The digest formats. The digest step writes DigestVersionTree; verify reads both.
const (
	// DigestVersionManifest digests list every entry of their period in a manifest that must
	// fit in one item (about 5,000 entries).
	DigestVersionManifest = 1
	// DigestVersionTree digests sign the size and root of a Merkle tree over their period's
	// entries: no ceiling, and an inclusion proof per entry.
	DigestVersionTree = 2
)

// Digest closes one period [PeriodStart, PeriodEnd) of the audit table: it commits to every
// entry whose written_at lies in the period (Count of them), names the previous digest's
// signature, and is signed. A version 2 digest commits through Root, a version 1 digest
// through EntriesHash and Manifest. See the package documentation and docs/audit.md.
type Digest struct {
	// Version is DigestVersionManifest (1) or DigestVersionTree (2).
	Version                int
	PeriodStart, PeriodEnd time.Time
	// Count is the number of entries: a version 2 digest's tree size.
	Count int64
	// Root is a version 2 digest's Merkle tree root over the period's entries (hex; see
	// PeriodTree).
	Root string
	// EntriesHash (version 1) is hex(SHA-256(manifest)), the manifest being one line per
	// entry (see ManifestLine), sorted.
	EntriesHash string
	// Manifest (version 1) is the lines themselves, so verify can name what changed. It is
	// stored gzip-compressed and authenticated by EntriesHash, which the signature covers.
	Manifest []ManifestLine
	// PrevPeriodStart and PrevSignature name the previous digest; both are "" (zero) on the
	// first digest of the chain.
	PrevPeriodStart time.Time
	PrevSignature   string
	KeyID           string
	Algorithm       string
	SignedAt        time.Time
	// RetainUntil is the digest's TTL: never before any entry it covers expires.
	RetainUntil int64
	// Signature is the base64 of the DER-encoded ECDSA signature of SHA-256(Canonical).
	Signature string
}

// Period names the digest's period for people: "<start> to <end>".
func (d Digest) Period() string { return PeriodName(d.PeriodStart, d.PeriodEnd) }

// PeriodName names the period [start, end).
func PeriodName(start, end time.Time) string {
	return start.UTC().Format(time.RFC3339) + " to " + end.UTC().Format(time.RFC3339)
}

// ManifestLine is what a digest holds of one entry.
type ManifestLine struct {
	EventID, Seq, NotificationID, Hash string
}

// Key identifies the entry: event ID and seq.
func (l ManifestLine) Key() string { return l.EventID + "\x00" + l.Seq }

// LineOf returns e's manifest line.
func LineOf(e Entry) ManifestLine {
	return ManifestLine{EventID: e.EventID, Seq: e.Seq, NotificationID: e.NotificationID, Hash: e.Hash}
}

// ManifestHash returns the entries_hash of a version 1 digest whose manifest is lines:
// hex(SHA-256(manifest)).
func ManifestHash(lines []ManifestLine) string {
	sum := sha256.Sum256(encodeManifest(lines))
	return hex.EncodeToString(sum[:])
}

// encodeManifest returns the manifest of lines: sorted by event ID then seq, each line
//
//	<len>:<event_id> " " <len>:<seq> " " <len>:<notification_id> " " <hash> "\n"
//
// with lengths in bytes, so no value can be mistaken for another.
func encodeManifest(lines []ManifestLine) []byte {
	sorted := append([]ManifestLine(nil), lines...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key() < sorted[j].Key() })
	var b bytes.Buffer
	for _, l := range sorted {
		fmt.Fprintf(&b, "%d:%s %d:%s %d:%s %s\n", len(l.EventID), l.EventID, len(l.Seq), l.Seq,
			len(l.NotificationID), l.NotificationID, l.Hash)
	}
	return b.Bytes()
}

// decodeManifest parses what encodeManifest wrote.
func decodeManifest(b []byte) ([]ManifestLine, error) {
	var out []ManifestLine
	for len(b) > 0 {
		var vals [3]string
		for i := range vals {
			n, rest, ok := bytes.Cut(b, []byte(":"))
			size, err := strconv.Atoi(string(n))
			if !ok || err != nil || size < 0 || size >= len(rest) || rest[size] != ' ' {
				return nil, errors.New("manifest line is malformed")
			}
			vals[i], b = string(rest[:size]), rest[size+1:]
		}
		h, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return nil, errors.New("manifest line is not terminated")
		}
		out = append(out, ManifestLine{EventID: vals[0], Seq: vals[1], NotificationID: vals[2], Hash: string(h)})
		b = rest
	}
	return out, nil
}

// CanonicalDigest returns the encoding of d that its signature covers: a header line naming
// the version, then one line "<name>:<length>:<value>" per field in this order (as in
// Canonical). Version 2: digest_version period_start period_end count tree_root
// prev_period_start prev_signature key_id algorithm signed_at retain_until. Version 1:
// period_start period_end count entries_hash, then the same from prev_period_start. Times are
// in TimeLayout ("" when zero). Neither the manifest (EntriesHash stands for it) nor the
// signature is part of it.
func CanonicalDigest(d Digest) []byte {
	var b bytes.Buffer
	head := [][2]string{
		{tables.DigestPeriodStart, tables.FormatTime(d.PeriodStart)},
		{tables.DigestPeriodEnd, tables.FormatTime(d.PeriodEnd)},
		{tables.DigestCount, strconv.FormatInt(d.Count, 10)},
		{tables.DigestEntriesHash, d.EntriesHash},
	}
	if d.Version == DigestVersionManifest {
		b.WriteString(digestHeader)
	} else {
		b.WriteString(digestHeaderV2)
		head = append([][2]string{{tables.DigestVersion, strconv.Itoa(d.Version)}}, head[:3]...)
		head = append(head, [2]string{tables.DigestTreeRoot, d.Root})
	}
	for _, f := range append(head, [][2]string{
		{tables.DigestPrevPeriodStart, tables.FormatTime(d.PrevPeriodStart)},
		{tables.DigestPrevSignature, d.PrevSignature},
		{tables.DigestKeyID, d.KeyID},
		{tables.DigestAlgorithm, d.Algorithm},
		{tables.DigestSignedAt, tables.FormatTime(d.SignedAt)},
		{tables.AuditRetainUntil, strconv.FormatInt(d.RetainUntil, 10)},
	}...) {
		fmt.Fprintf(&b, "%s:%d:%s\n", f[0], len(f[1]), f[1])
	}
	return b.Bytes()
}

// DigestSum returns the SHA-256 of d's canonical encoding: what the signature is over.
func DigestSum(d Digest) []byte {
	sum := sha256.Sum256(CanonicalDigest(d))
	return sum[:]
}

// DigestItem returns d as an audit table item under DigestEventID, its TTL (drop_after) its
// retain_until: a version 2 digest with
// its version and tree root, a version 1 digest with its entries hash and compressed manifest.
func DigestItem(d Digest) (map[string]ddbtypes.AttributeValue, error) {
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	n := func(v int64) ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	item := map[string]ddbtypes.AttributeValue{
		tables.AuditEventID:        s(tables.DigestEventID),
		tables.AuditSeq:            s(tables.FormatTime(d.PeriodStart)),
		tables.DigestPeriodStart:   s(tables.FormatTime(d.PeriodStart)),
		tables.DigestPeriodEnd:     s(tables.FormatTime(d.PeriodEnd)),
		tables.DigestCount:         n(d.Count),
		tables.DigestKeyID:         s(d.KeyID),
		tables.DigestAlgorithm:     s(d.Algorithm),
		tables.DigestSignedAt:      s(tables.FormatTime(d.SignedAt)),
		tables.AuditRetainUntil:    n(d.RetainUntil),
		tables.AuditDropAfter:      n(d.RetainUntil),
		tables.DigestSignature:     s(d.Signature),
		tables.DigestPrevSignature: s(d.PrevSignature),
	}
	if !d.PrevPeriodStart.IsZero() {
		item[tables.DigestPrevPeriodStart] = s(tables.FormatTime(d.PrevPeriodStart))
	}
	if d.Version != DigestVersionManifest {
		item[tables.DigestVersion] = n(int64(d.Version))
		item[tables.DigestTreeRoot] = s(d.Root)
		return item, nil
	}
	m, err := gzipManifest(d)
	if err != nil {
		return nil, err
	}
	item[tables.DigestEntriesHash] = s(d.EntriesHash)
	item[tables.DigestManifest] = &ddbtypes.AttributeValueMemberB{Value: m}
	return item, nil
}

// gzipManifest returns a version 1 digest's manifest, compressed.
func gzipManifest(d Digest) ([]byte, error) {
	var z bytes.Buffer
	gz := gzip.NewWriter(&z)
	if _, err := gz.Write(encodeManifest(d.Manifest)); err != nil {
		return nil, fmt.Errorf("audit.digest item %s: %w", d.Period(), err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("audit.digest item %s: %w", d.Period(), err)
	}
	return z.Bytes(), nil
}

// DigestFromItem reads a digest item. An attribute of the wrong type, or a manifest that does
// not decompress, is an error naming the attribute.
func DigestFromItem(item map[string]ddbtypes.AttributeValue) (Digest, error) {
	var d Digest
	var errs []error
	str := func(name string) string {
		v, ok := item[name]
		if !ok {
			return ""
		}
		sv, ok := v.(*ddbtypes.AttributeValueMemberS)
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not a string", name))
			return ""
		}
		return sv.Value
	}
	tm := func(name string) time.Time {
		t, err := tables.ParseTime(str(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s is not a time", name))
		}
		return t
	}
	num := func(name string) int64 {
		v, ok := item[name].(*ddbtypes.AttributeValueMemberN)
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not a number", name))
			return 0
		}
		x, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s is not an integer", name))
		}
		return x
	}
	d.PeriodStart, d.PeriodEnd = tm(tables.DigestPeriodStart), tm(tables.DigestPeriodEnd)
	d.Count, d.RetainUntil = num(tables.DigestCount), num(tables.AuditRetainUntil)
	d.EntriesHash, d.PrevSignature = str(tables.DigestEntriesHash), str(tables.DigestPrevSignature)
	d.PrevPeriodStart, d.SignedAt = tm(tables.DigestPrevPeriodStart), tm(tables.DigestSignedAt)
	d.KeyID, d.Algorithm, d.Signature = str(tables.DigestKeyID), str(tables.DigestAlgorithm), str(tables.DigestSignature)
	d.Version = DigestVersionManifest
	if _, ok := item[tables.DigestVersion]; ok {
		d.Version, d.Root = int(num(tables.DigestVersion)), str(tables.DigestTreeRoot)
	} else if b, ok := item[tables.DigestManifest].(*ddbtypes.AttributeValueMemberB); ok {
		m, err := gunzip(b.Value)
		if err == nil {
			d.Manifest, err = decodeManifest(m)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", tables.DigestManifest, err))
		}
	} else {
		errs = append(errs, fmt.Errorf("%s is missing", tables.DigestManifest))
	}
	if err := errors.Join(errs...); err != nil {
		return d, fmt.Errorf("audit.digest %s: %w", str(tables.AuditSeq), err)
	}
	return d, nil
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, errors.New("not gzip")
	}
	// A manifest fits in one item (400 KB compressed); refuse anything absurdly larger.
	out, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, errors.New("not gzip")
	}
	return out, nil
}
