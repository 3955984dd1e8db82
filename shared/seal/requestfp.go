package seal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// RequestFPPrefix starts every request fingerprint RequestFingerprinter writes, so a keyed
// fingerprint can be told from the unkeyed SHA-256 that records admitted before it hold.
const RequestFPPrefix = "h1:"

// RequestFPSize is how many bytes of the HMAC-SHA256 a fingerprint keeps: 128 bits, written
// in unpadded base64url (22 characters). Telling a replay from a key reuse needs no more:
// without the key no one can make two requests collide, and by chance two do with a
// probability of 2^-128. The record's size is what it saves (docs/benchmarks.md).
const RequestFPSize = 16

// legacyKeyedPrefix starts the keyed fingerprints of earlier versions: the whole HMAC in hex.
const legacyKeyedPrefix = "hmac-sha256:"

// MinRequestKeySize is the shortest fingerprint key RequestFingerprinter accepts, in bytes.
const MinRequestKeySize = 32

// RequestFingerprinter computes request fingerprints: RequestFPPrefix and the first
// RequestFPSize bytes of the HMAC-SHA256 of the request's canonical form under a key of its
// own (neither the sealing key nor the destination pepper), in unpadded base64url. Without
// the key a stored fingerprint is no help in guessing a code.
//
// Records admitted before may hold an earlier keyed form, the whole HMAC in hex behind
// "hmac-sha256:"; SameRequest still recognises a replay of one. The unkeyed SHA-256 of
// records admitted before fingerprints were keyed is refused (a key reuse): its sunset, the
// longest record life (MAX_AHEAD_HOURS plus STATUS_GRACE_HOURS) after that upgrade, is past.
type RequestFingerprinter struct {
	key []byte
}

var _ notify.RequestHasher = (*RequestFingerprinter)(nil)

// NewRequestFingerprinter returns a RequestFingerprinter keyed with key, which must be at
// least MinRequestKeySize bytes. The error never holds the key.
func NewRequestFingerprinter(key []byte) (*RequestFingerprinter, error) {
	if len(key) < MinRequestKeySize {
		return nil, fmt.Errorf("seal.request fingerprinter: key is %d bytes, want at least %d", len(key), MinRequestKeySize)
	}
	return &RequestFingerprinter{key: bytes.Clone(key)}, nil
}

// RequestFP returns the keyed fingerprint of canonical.
func (f *RequestFingerprinter) RequestFP(canonical []byte) string {
	return RequestFPPrefix + base64.RawURLEncoding.EncodeToString(f.mac(canonical)[:RequestFPSize])
}

// SameRequest reports whether stored is the fingerprint of canonical: a keyed one under this
// key (either form). Comparisons take constant time.
func (f *RequestFingerprinter) SameRequest(stored string, canonical []byte) bool {
	if b64, ok := strings.CutPrefix(stored, RequestFPPrefix); ok {
		got, err := base64.RawURLEncoding.DecodeString(b64)
		return err == nil && hmac.Equal(got, f.mac(canonical)[:RequestFPSize])
	}
	if hexFP, ok := strings.CutPrefix(stored, legacyKeyedPrefix); ok {
		got, err := hex.DecodeString(hexFP)
		return err == nil && hmac.Equal(got, f.mac(canonical))
	}
	// The unkeyed SHA-256 of records admitted before keying is never accepted: those records
	// are long gone, and anyone who can write the table could forge one.
	return false
}

func (f *RequestFingerprinter) mac(canonical []byte) []byte {
	m := hmac.New(sha256.New, f.key)
	m.Write(canonical)
	return m.Sum(nil)
}

// OwnerFPSize is the length in bytes of an owner fingerprint before encoding: the first 16
// bytes (128 bits) of the HMAC, 22 characters of unpadded base64url. A record holds one; the
// few principals that call the API are told apart with a margin beyond reach, and nobody
// without the key can compute the fingerprint of a principal they want to pass for.
const OwnerFPSize = 16

// ownerDomain separates owner fingerprints from request fingerprints under the same key: a
// request's canonical form is a JSON object, which never starts with it.
const ownerDomain = "owner\x00"

var _ notify.OwnerHasher = (*RequestFingerprinter)(nil)

// OwnerFP returns the owner fingerprint of principal (a canonical principal ARN): the
// truncated HMAC-SHA256 of it under the request-fingerprint key, in its own domain. Stored on
// every record, it costs 22 bytes and the attribute's name; the ARN itself would cost up to
// some 100 and tell a reader of the table which roles call the API.
func (f *RequestFingerprinter) OwnerFP(principal string) string {
	return base64.RawURLEncoding.EncodeToString(f.mac([]byte(ownerDomain + principal))[:OwnerFPSize])
}
