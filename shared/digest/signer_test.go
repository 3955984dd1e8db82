package digest

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// fakeKMS is a KMS asymmetric signing key: it signs a precomputed SHA-256 digest with
// ECDSA_SHA_256 and hands out the public key as DER SubjectPublicKeyInfo, as KMS does.
type fakeKMS struct {
	key   *ecdsa.PrivateKey
	keyID string
}

func newFakeKMS(t *testing.T) *fakeKMS {
	t.Helper()
	key, _, err := NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	return &fakeKMS{key: key, keyID: "arn:aws:kms:us-east-1:111122223333:key/digest"}
}

func (f *fakeKMS) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	if aws.ToString(in.KeyId) != f.keyID || in.MessageType != kmstypes.MessageTypeDigest ||
		in.SigningAlgorithm != kmstypes.SigningAlgorithmSpecEcdsaSha256 || len(in.Message) != 32 {
		return nil, errors.New("fake kms: unexpected sign request")
	}
	sig, err := ecdsa.SignASN1(rand.Reader, f.key, in.Message)
	return &kms.SignOutput{Signature: sig, KeyId: in.KeyId, SigningAlgorithm: in.SigningAlgorithm}, err
}

func (f *fakeKMS) GetPublicKey(_ context.Context, in *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	if aws.ToString(in.KeyId) != f.keyID {
		return nil, errors.New("fake kms: NotFoundException")
	}
	der, err := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
	return &kms.GetPublicKeyOutput{PublicKey: der, KeySpec: kmstypes.KeySpecEccNistP256}, err
}

// signed returns d signed by s: a version 1 digest of its manifest when d.Version is 1,
// else the version 2 digest of the entries its manifest names (Manifest then nil).
func signed(t *testing.T, s Signer, d auditlog.Digest) auditlog.Digest {
	t.Helper()
	d.KeyID, d.Algorithm = s.KeyID(), SigningAlgorithm
	if d.Version == auditlog.DigestVersionManifest {
		d.Count, d.EntriesHash = int64(len(d.Manifest)), auditlog.ManifestHash(d.Manifest)
	} else {
		var tree auditlog.PeriodTree
		for _, l := range d.Manifest {
			tree.Add(l)
		}
		d.Version, d.Count, d.Root, d.Manifest = auditlog.DigestVersionTree, tree.Size(), tree.Root(), nil
	}
	sig, err := s.Sign(context.Background(), auditlog.DigestSum(d))
	if err != nil {
		t.Fatal(err)
	}
	d.Signature = b64(sig)
	return d
}

func TestSigners(t *testing.T) {
	f := newFakeKMS(t)
	local, _, err := NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	kmsPub, err := auditor.KMSPublicKey(context.Background(), f, f.keyID)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)
	d := auditlog.Digest{PeriodStart: start, PeriodEnd: start.Add(time.Hour), RetainUntil: 1,
		Manifest: []auditlog.ManifestLine{{EventID: "e", Seq: "k#0000000001", NotificationID: "n", Hash: strings.Repeat("a", 64)}}}
	tests := []struct {
		name   string
		signer Signer
		pub    *ecdsa.PublicKey
		other  *ecdsa.PublicKey
	}{
		{"kms", KMSSigner{KMS: f, Key: f.keyID}, kmsPub, &local.PublicKey},
		{"local", LocalSigner{Key: local}, &local.PublicKey, kmsPub},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := signed(t, tc.signer, d)
			if !auditor.VerifySignature(tc.pub, s) {
				t.Fatal("the signature does not verify with the signer's public key")
			}
			if auditor.VerifySignature(tc.other, s) {
				t.Error("the signature verifies with another key")
			}
			changed := s
			changed.Count++
			if auditor.VerifySignature(tc.pub, changed) {
				t.Error("a changed count still verifies")
			}
			pemKey, err := PublicKeyPEM(tc.pub)
			if err != nil {
				t.Fatal(err)
			}
			back, err := auditor.ParsePublicKeyPEM(pemKey)
			if err != nil || !back.Equal(tc.pub) {
				t.Errorf("PEM round trip: %v", err)
			}
		})
	}
	if _, err := auditor.KMSPublicKey(context.Background(), f, "other"); err == nil {
		t.Error("KMSPublicKey of an unknown key succeeded")
	}
}

// TestDigestItemRoundTrip stores and reads back a digest of each version: a version 1
// (manifest) digest stays verifiable, and a version 2 digest keeps its version and root.
func TestDigestItemRoundTrip(t *testing.T) {
	key, _, err := NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, version := range []int{auditlog.DigestVersionManifest, auditlog.DigestVersionTree} {
		d := signed(t, LocalSigner{Key: key}, auditlog.Digest{Version: version, PeriodStart: start, PeriodEnd: start.Add(time.Hour),
			PrevPeriodStart: start.Add(-time.Hour), PrevSignature: "cHJldg==", SignedAt: start.Add(time.Hour + 90*time.Second), RetainUntil: 42,
			Manifest: []auditlog.ManifestLine{
				{EventID: "evt 2", Seq: "k:2#0000000001", NotificationID: "n2", Hash: strings.Repeat("b", 64)},
				{EventID: "evt-1", Seq: "k:1#0000000002", NotificationID: "n1", Hash: strings.Repeat("c", 64)},
			}})
		item, err := auditlog.DigestItem(d)
		if err != nil {
			t.Fatal(err)
		}
		back, err := auditlog.DigestFromItem(item)
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if version == auditlog.DigestVersionTree {
			want = 0
		}
		if !auditor.VerifySignature(&key.PublicKey, back) || !auditor.ManifestIntact(back) || len(back.Manifest) != want ||
			back.Version != version || back.Root != d.Root || back.Count != 2 {
			t.Errorf("version %d: round trip lost something: %+v", version, back)
		}
		// The version is signed: the same fields read as the other version do not verify.
		other := back
		other.Version = 3 - version
		if auditor.VerifySignature(&key.PublicKey, other) {
			t.Errorf("version %d: the signature still verifies under version %d", version, other.Version)
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
