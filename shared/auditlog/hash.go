package auditlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// canonicalHeader starts every canonical encoding; it names the encoding's version.
const canonicalHeader = "resetnotify-audit-v1\n"

// Canonical returns the canonical encoding of e that its hash covers (see the package
// documentation). It never includes e.PrevHash or e.Hash.
func Canonical(e Entry) []byte {
	var b bytes.Buffer
	b.WriteString(canonicalHeader)
	for _, f := range fields[:canonicalFields] {
		v := f.get(&e)
		b.WriteString(f.name)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ComputeHash returns hex(SHA-256(raw(prevHash) || Canonical(e))). prevHash must be 64 hex
// digits.
func ComputeHash(prevHash string, e Entry) (string, error) {
	raw, err := hex.DecodeString(prevHash)
	if err != nil || len(raw) != sha256.Size {
		return "", fmt.Errorf("audit.hash %s: prev_hash is not 64 hex digits", e.Seq)
	}
	h := sha256.New()
	h.Write(raw)
	h.Write(Canonical(e))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Link sets e.PrevHash to prevHash and e.Hash to the hash over both: it chains e after the
// entry whose hash is prevHash (GenesisHash for a first entry).
func Link(e Entry, prevHash string) (Entry, error) {
	e.PrevHash = prevHash
	h, err := ComputeHash(prevHash, e)
	if err != nil {
		return Entry{}, err
	}
	e.Hash = h
	return e, nil
}
