package seal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// KMSAPI is the part of the KMS client that KMSKeys uses; *kms.Client satisfies it.
type KMSAPI interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

var _ KMSAPI = (*kms.Client)(nil)

// encryptionContext is sent with every KMS call, so a data key made for sealing cannot be
// decrypted for another use, and CloudTrail shows what each call was for.
var encryptionContext = map[string]string{"app": "resetnotify", "use": "seal"}

// EncryptionContext returns a copy of the encryption context every KMS call carries. The IAM
// conditions of template.yaml must require exactly it (a test checks them).
func EncryptionContext() map[string]string { return maps.Clone(encryptionContext) }

// DefaultKMSCacheSize bounds how many decrypted data keys KMSKeys keeps.
const DefaultKMSCacheSize = 256

// KMSKeys is a KeySource using AWS KMS envelope encryption. The first Seal in a process calls
// GenerateDataKey once; that data key seals everything the process seals afterwards, and its
// KMS-encrypted form is the reference stored in each envelope. Opening calls Decrypt once per
// distinct encrypted data key and keeps the result in memory, so a warm function seldom calls
// KMS at all. It is safe for concurrent use.
type KMSKeys struct {
	client    KMSAPI
	keyID     string
	cacheSize int

	mu      sync.Mutex
	current *DataKey
	cache   map[string][]byte // encrypted data key -> plaintext
}

var _ KeySource = (*KMSKeys)(nil)

// NewKMSKeys returns a source over the KMS key keyID (ID, ARN or alias).
func NewKMSKeys(client KMSAPI, keyID string) *KMSKeys {
	return &KMSKeys{client: client, keyID: keyID, cacheSize: DefaultKMSCacheSize, cache: map[string][]byte{}}
}

// Kind returns KindKMS.
func (k *KMSKeys) Kind() KeyKind { return KindKMS }

// Current returns this process's data key, generating it on first use. A failed
// GenerateDataKey is not remembered: the next call tries again.
func (k *KMSKeys) Current(ctx context.Context) (DataKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.current != nil {
		return *k.current, nil
	}
	out, err := k.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(k.keyID),
		KeySpec:           kmstypes.DataKeySpecAes256,
		EncryptionContext: encryptionContext,
	})
	if err != nil {
		return DataKey{}, fmt.Errorf("seal.kms generate data key: %w", err)
	}
	if len(out.Plaintext) != DataKeySize || len(out.CiphertextBlob) == 0 {
		return DataKey{}, fmt.Errorf("seal.kms generate data key: got %d-byte key", len(out.Plaintext))
	}
	dk := DataKey{Ref: bytes.Clone(out.CiphertextBlob), Key: bytes.Clone(out.Plaintext)}
	k.current = &dk
	k.remember(dk.Ref, dk.Key)
	return dk, nil
}

// Key returns the plaintext of the encrypted data key ref, from the cache or from KMS Decrypt.
// A ref that KMS refuses as invalid ciphertext gives an error wrapping ErrUnknownKey.
func (k *KMSKeys) Key(ctx context.Context, ref []byte) ([]byte, error) {
	k.mu.Lock()
	key, ok := k.cache[string(ref)]
	k.mu.Unlock()
	if ok {
		return key, nil
	}
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    ref,
		KeyId:             aws.String(k.keyID),
		EncryptionContext: encryptionContext,
	})
	var invalid *kmstypes.InvalidCiphertextException
	if errors.As(err, &invalid) {
		return nil, fmt.Errorf("seal.kms decrypt data key: %w: %w", ErrUnknownKey, err)
	}
	if err != nil {
		return nil, fmt.Errorf("seal.kms decrypt data key: %w", err)
	}
	if len(out.Plaintext) != DataKeySize {
		return nil, fmt.Errorf("seal.kms decrypt data key: got %d-byte key", len(out.Plaintext))
	}
	key = bytes.Clone(out.Plaintext)
	k.mu.Lock()
	k.remember(bytes.Clone(ref), key)
	k.mu.Unlock()
	return key, nil
}

// remember caches a data key; k.mu must be held. When the cache is full it is emptied but
// for the current key: keys are cheap to fetch again and a full cache is rare (one data key
// per cold start of a sealing function).
func (k *KMSKeys) remember(ref, key []byte) {
	if len(k.cache) >= k.cacheSize {
		clear(k.cache)
		if k.current != nil {
			k.cache[string(k.current.Ref)] = k.current.Key
		}
	}
	k.cache[string(ref)] = key
}
