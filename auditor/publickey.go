package auditor

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// PublicKeyAPI is the part of the KMS API that KMSPublicKey uses: reading a public key, all
// the auditor's role may do with the signing key. *kms.Client satisfies it.
type PublicKeyAPI interface {
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, optFns ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
}

var _ PublicKeyAPI = (*kms.Client)(nil)

// KMSPublicKey fetches the public half of a KMS signing key and checks that it is an ECDSA
// P-256 key.
func KMSPublicKey(ctx context.Context, api PublicKeyAPI, keyID string) (*ecdsa.PublicKey, error) {
	out, err := api.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(keyID)})
	if err != nil {
		return nil, fmt.Errorf("auditor.public key %s: %w", keyID, err)
	}
	pub, err := parsePKIX(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("auditor.public key %s: %w", keyID, err)
	}
	return pub, nil
}

// ParsePublicKeyPEM reads a "PUBLIC KEY" PEM block holding an ECDSA P-256 key.
func ParsePublicKeyPEM(b []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("auditor.public key: not a PUBLIC KEY PEM block")
	}
	pub, err := parsePKIX(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("auditor.public key: %w", err)
	}
	return pub, nil
}

func parsePKIX(der []byte) (*ecdsa.PublicKey, error) {
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, errors.New("not a SubjectPublicKeyInfo")
	}
	pub, ok := key.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 public key")
	}
	return pub, nil
}
