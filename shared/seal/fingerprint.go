package seal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// FingerprintSize is the length in bytes of a destination fingerprint before hex encoding:
// the first 16 bytes (128 bits) of the HMAC, 32 hex characters. It is ample to tell
// destinations apart (collisions need about 2^64 numbers) while keeping audit items small;
// being keyed, it cannot be reversed by hashing every phone number without the pepper.
const FingerprintSize = 16

// MinPepperSize is the shortest pepper Fingerprinter accepts.
const MinPepperSize = 16

// Fingerprinter computes destination fingerprints: HMAC-SHA256 of the E.164 number keyed with
// a secret pepper, truncated to FingerprintSize bytes and hex-encoded. The same number gives
// the same fingerprint under the same pepper, so an auditor holding the pepper can find a
// number's records; without it the fingerprint reveals nothing.
type Fingerprinter struct {
	pepper []byte
}

var _ notify.DestinationHasher = (*Fingerprinter)(nil)

// NewFingerprinter returns a Fingerprinter keyed with pepper, which must be at least
// MinPepperSize bytes.
func NewFingerprinter(pepper []byte) (*Fingerprinter, error) {
	if len(pepper) < MinPepperSize {
		return nil, fmt.Errorf("seal.fingerprinter: pepper is %d bytes, want at least %d", len(pepper), MinPepperSize)
	}
	return &Fingerprinter{pepper: bytes.Clone(pepper)}, nil
}

// DestinationFP returns the fingerprint of the E.164 number e164, as given (validation has
// already put it in canonical form).
func (f *Fingerprinter) DestinationFP(e164 string) string {
	m := hmac.New(sha256.New, f.pepper)
	m.Write([]byte(e164))
	return hex.EncodeToString(m.Sum(nil)[:FingerprintSize])
}
