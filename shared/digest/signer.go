package digest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// SigningAlgorithm names how digests are signed: ECDSA on NIST P-256 over the SHA-256 of the
// digest's canonical encoding, the signature DER-encoded (KMS's ECDSA_SHA_256).
const SigningAlgorithm = string(kmstypes.SigningAlgorithmSpecEcdsaSha256)

// Signer signs the SHA-256 sum of a digest's canonical encoding. In AWS it is a KMS
// asymmetric key (ECC_NIST_P256, SIGN_VERIFY); locally an ECDSA P-256 key from configuration.
type Signer interface {
	// KeyID names the key; it is stored in, and signed with, every digest.
	KeyID() string
	// Sign returns the DER-encoded ECDSA signature of sum.
	Sign(ctx context.Context, sum []byte) ([]byte, error)
}

// KMSAPI is the part of the KMS client that digests use: the digest function may only Sign,
// auditors only GetPublicKey.
type KMSAPI interface {
	Sign(ctx context.Context, in *kms.SignInput, optFns ...func(*kms.Options)) (*kms.SignOutput, error)
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, optFns ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
}

var _ KMSAPI = (*kms.Client)(nil)

// KMSSigner signs with a KMS asymmetric key. The private key never leaves KMS.
type KMSSigner struct {
	KMS KMSAPI
	Key string
}

// KeyID returns the configured key ID or ARN.
func (s KMSSigner) KeyID() string { return s.Key }

// Sign asks KMS to sign sum as a precomputed SHA-256 digest (MessageType DIGEST).
func (s KMSSigner) Sign(ctx context.Context, sum []byte) ([]byte, error) {
	out, err := s.KMS.Sign(ctx, &kms.SignInput{
		KeyId:            aws.String(s.Key),
		Message:          sum,
		MessageType:      kmstypes.MessageTypeDigest,
		SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		return nil, fmt.Errorf("digest.sign %s: %w", s.Key, err)
	}
	return out.Signature, nil
}

// LocalSigner signs with an ECDSA P-256 private key held in memory (local runs and tests).
type LocalSigner struct {
	Key *ecdsa.PrivateKey
}

// KeyID returns "local:" and the first 16 hex digits of the SHA-256 of the public key (DER).
func (s LocalSigner) KeyID() string { return LocalKeyID(&s.Key.PublicKey) }

// Sign signs sum with the private key.
func (s LocalSigner) Sign(_ context.Context, sum []byte) ([]byte, error) {
	sig, err := ecdsa.SignASN1(rand.Reader, s.Key, sum)
	if err != nil {
		return nil, fmt.Errorf("digest.sign local: %w", err)
	}
	return sig, nil
}

// LocalKeyID names a local key by its public half.
func LocalKeyID(pub *ecdsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "local:invalid"
	}
	sum := sha256.Sum256(der)
	return "local:" + hex.EncodeToString(sum[:8])
}

// NewLocalKey returns a fresh ECDSA P-256 key and its PKCS #8 PEM encoding.
func NewLocalKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("digest.new key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("digest.new key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKeyPEM reads a PKCS #8 "PRIVATE KEY" (or SEC 1 "EC PRIVATE KEY") PEM block
// holding an ECDSA P-256 key. Its errors never quote the input.
func ParsePrivateKeyPEM(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("not a PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block is %q, want PRIVATE KEY", block.Type)
	}
	if err != nil {
		return nil, errors.New("not a valid private key")
	}
	k, ok := key.(*ecdsa.PrivateKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 key")
	}
	return k, nil
}

// PublicKeyPEM returns pub as a "PUBLIC KEY" PEM block (SubjectPublicKeyInfo), the form
// `auditctl public-key` prints and `openssl` reads.
func PublicKeyPEM(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("digest.public key pem: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
