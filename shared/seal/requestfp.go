package seal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
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

// legacyFPLen is the length of the unkeyed fingerprint of earlier versions: hex SHA-256.
const legacyFPLen = 2 * sha256.Size

// RequestFingerprinter computes request fingerprints: RequestFPPrefix and the first
// RequestFPSize bytes of the HMAC-SHA256 of the request's canonical form under a key of its
// own (neither the sealing key nor the destination pepper), in unpadded base64url. Without
// the key a stored fingerprint is no help in guessing a code.
//
// Records admitted before hold an earlier form: the whole HMAC in hex behind
// "hmac-sha256:", or, before fingerprints were keyed, the bare hex SHA-256 of the same
// canonical form. SameRequest still recognises a replay of such a record, so a client that
// retries across the upgrade gets its 200 rather than a 422; the old forms are never written
// again, and such records are gone once the longest record life (MAX_AHEAD_HOURS plus
// STATUS_GRACE_HOURS) has passed since the upgrade.
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
// key, or the unkeyed SHA-256 of a record admitted before keying. Comparisons take constant
// time.
func (f *RequestFingerprinter) SameRequest(stored string, canonical []byte) bool {
	if b64, ok := strings.CutPrefix(stored, RequestFPPrefix); ok {
		got, err := base64.RawURLEncoding.DecodeString(b64)
		return err == nil && hmac.Equal(got, f.mac(canonical)[:RequestFPSize])
	}
	if hexFP, ok := strings.CutPrefix(stored, legacyKeyedPrefix); ok {
		got, err := hex.DecodeString(hexFP)
		return err == nil && hmac.Equal(got, f.mac(canonical))
	}
	if len(stored) != legacyFPLen {
		return false
	}
	sum := sha256.Sum256(canonical)
	return subtle.ConstantTimeCompare([]byte(stored), []byte(hex.EncodeToString(sum[:]))) == 1
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
