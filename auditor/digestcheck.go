package auditor

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// VerifySignature reports whether d's signature is pub's over d's canonical encoding.
func VerifySignature(pub *ecdsa.PublicKey, d auditlog.Digest) bool {
	sig, err := base64.StdEncoding.DecodeString(d.Signature)
	if err != nil || pub == nil {
		return false
	}
	return ecdsa.VerifyASN1(pub, auditlog.DigestSum(d), sig)
}

// ManifestIntact reports whether a version 1 digest's manifest is the one its signed
// EntriesHash and Count name, and whether a version 2 digest is well formed: a known version,
// a count, a 64-digit root and no manifest.
func ManifestIntact(d auditlog.Digest) bool {
	switch d.Version {
	case auditlog.DigestVersionManifest:
		return int64(len(d.Manifest)) == d.Count && auditlog.ManifestHash(d.Manifest) == d.EntriesHash
	case auditlog.DigestVersionTree:
		raw, err := hex.DecodeString(d.Root)
		return err == nil && len(raw) == sha256.Size && d.Count >= 0 && d.Manifest == nil && d.EntriesHash == ""
	}
	return false
}

// shortHash returns the first 12 hex digits of h, for messages.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return strings.TrimSpace(h)
}
