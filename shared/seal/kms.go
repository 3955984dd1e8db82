package seal

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

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

// KeyRefSize is the length of the reference a KindKMSStored envelope carries: a random ID of
// the data key, whose KMS-encrypted form is held once in a KeyStore.
const KeyRefSize = 16

// DefaultKeyMaxAge is how long a process seals with one stored data key before it makes the
// next: one GenerateDataKey and one KeyStore put per sealing instance and hour at most.
const DefaultKeyMaxAge = time.Hour

// KeyRetention is how long a stored data key is kept past the last moment it may seal (its
// creation plus the maximum age): longer than any record that may hold an envelope of it lives
// (expires_at at most MAX_AHEAD_HOURS, 24 h by default, after admission, plus the status grace,
// 24 h), so no record outlives its key. The key store's TTL removes it afterwards.
const KeyRetention = 7 * 24 * time.Hour

// KeyStore keeps the KMS-encrypted form of data keys under their KeyRefSize-byte IDs (the
// seal-keys table in AWS; shared/adapters/sealkeys). It never holds a plaintext key.
type KeyStore interface {
	// PutKey stores encrypted under id once; an id already stored is an error (ids are random,
	// so it never is), never overwritten. expiresAt is when the store may forget it.
	PutKey(ctx context.Context, id, encrypted []byte, expiresAt time.Time) error
	// GetKey returns what PutKey stored under id, read strongly consistently (an envelope can
	// be opened right after it was sealed), or an error wrapping ErrUnknownKey when nothing is.
	GetKey(ctx context.Context, id []byte) ([]byte, error)
}

// KindOpener is a KeySource that opens envelopes of more than its own kind (KMSKeys: the
// envelopes that carry their encrypted data key, written before the key store).
type KindOpener interface {
	// Opens reports whether the source can supply the keys of kind.
	Opens(kind KeyKind) bool
	// KeyOf is Key for an envelope of kind.
	KeyOf(ctx context.Context, kind KeyKind, ref []byte) ([]byte, error)
}

// KMSKeys is a KeySource using AWS KMS envelope encryption. A sealing process calls
// GenerateDataKey once per data key and seals with it until it is DefaultKeyMaxAge old.
//
// With a KeyStore (as deployed: NewStoredKMSKeys), the envelope names the data key by a random
// 16-byte ID (KindKMSStored) and the key's KMS-encrypted form (~184 bytes) is put once in the
// store, not in every record. Without one (NewKMSKeys), the envelope carries the encrypted data
// key itself (KindKMS, the format before the store), and a process keeps its first data key
// for ever. Either way, opening reads the encrypted key (from the envelope or, on a cache miss,
// the store), calls Decrypt once per distinct data key and keeps the result in memory, so a
// warm function seldom calls KMS or the store at all; envelopes of both kinds open. It is safe
// for concurrent use.
type KMSKeys struct {
	client    KMSAPI
	keyID     string
	store     KeyStore
	maxAge    time.Duration
	now       func() time.Time
	cacheSize int

	mu       sync.Mutex
	current  *DataKey
	madeAt   time.Time
	cache    map[string][]byte // kind byte + reference -> plaintext
	inflight map[string]*fetch // the same, while one caller fetches it
}

// fetch is one caller's fetch of a data key that others wait for: a batch's messages, opened
// concurrently on a cold start, cost one read and one Decrypt, not one each.
type fetch struct {
	done chan struct{}
	key  []byte
	err  error
}

var (
	_ KeySource  = (*KMSKeys)(nil)
	_ KindOpener = (*KMSKeys)(nil)
)

// NewKMSKeys returns a source over the KMS key keyID (ID, ARN or alias) that writes the
// encrypted data key into every envelope (KindKMS). The functions use NewStoredKMSKeys.
func NewKMSKeys(client KMSAPI, keyID string) *KMSKeys {
	return &KMSKeys{client: client, keyID: keyID, cacheSize: DefaultKMSCacheSize, cache: map[string][]byte{}, inflight: map[string]*fetch{}, now: time.Now}
}

// NewStoredKMSKeys returns a source over the KMS key keyID whose envelopes name their data key
// by a short ID, its encrypted form kept in store (KindKMSStored); a data key seals for at most
// maxAge (DefaultKeyMaxAge when 0).
func NewStoredKMSKeys(client KMSAPI, keyID string, store KeyStore, maxAge time.Duration) *KMSKeys {
	k := NewKMSKeys(client, keyID)
	k.store, k.maxAge = store, maxAge
	if k.maxAge <= 0 {
		k.maxAge = DefaultKeyMaxAge
	}
	return k
}

// WithClock makes k read the time from now (tests of the rotation).
func (k *KMSKeys) WithClock(now func() time.Time) *KMSKeys {
	k.now = now
	return k
}

// Kind returns KindKMSStored with a key store, KindKMS without.
func (k *KMSKeys) Kind() KeyKind {
	if k.store != nil {
		return KindKMSStored
	}
	return KindKMS
}

// Opens reports whether k opens envelopes of kind: KindKMS always, KindKMSStored with a store.
func (k *KMSKeys) Opens(kind KeyKind) bool {
	return kind == KindKMS || (kind == KindKMSStored && k.store != nil)
}

// Current returns the data key to seal with, generating one on first use and, with a store,
// once the current one is maxAge old; a new stored key is put in the store before it seals
// anything. A failed GenerateDataKey or put is not remembered: the next call tries again.
func (k *KMSKeys) Current(ctx context.Context) (DataKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if k.current != nil && (k.store == nil || now.Sub(k.madeAt) < k.maxAge) {
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
	if k.store != nil {
		id := make([]byte, KeyRefSize)
		if _, err := rand.Read(id); err != nil {
			return DataKey{}, fmt.Errorf("seal.kms data key id: %w", err)
		}
		if err := k.store.PutKey(ctx, id, dk.Ref, now.Add(k.maxAge+KeyRetention)); err != nil {
			return DataKey{}, fmt.Errorf("seal.kms store data key: %w", err)
		}
		dk.Ref = id
	}
	k.current, k.madeAt = &dk, now
	k.remember(cacheKey(k.Kind(), dk.Ref), dk.Key)
	return dk, nil
}

// Key returns the data key ref names in an envelope of k's own kind.
func (k *KMSKeys) Key(ctx context.Context, ref []byte) ([]byte, error) {
	return k.KeyOf(ctx, k.Kind(), ref)
}

// KeyOf returns the plaintext of the data key ref names in an envelope of kind: from the cache,
// else from KMS Decrypt of the encrypted key (the ref itself for KindKMS; what the store holds
// under the ref for KindKMSStored), fetched by one caller while concurrent callers for the same
// key wait for it. A ref that KMS refuses as invalid ciphertext, or that the store does not
// hold, gives an error wrapping ErrUnknownKey; other failures are transient (not remembered).
func (k *KMSKeys) KeyOf(ctx context.Context, kind KeyKind, ref []byte) ([]byte, error) {
	if !k.Opens(kind) {
		return nil, fmt.Errorf("seal.kms: %s envelope: %w", kind, ErrUnknownKey)
	}
	ck := cacheKey(kind, ref)
	k.mu.Lock()
	if key, ok := k.cache[ck]; ok {
		k.mu.Unlock()
		return key, nil
	}
	if f, ok := k.inflight[ck]; ok {
		k.mu.Unlock()
		select {
		case <-f.done:
			return f.key, f.err
		case <-ctx.Done():
			return nil, fmt.Errorf("seal.kms data key: %w", ctx.Err())
		}
	}
	f := &fetch{done: make(chan struct{})}
	k.inflight[ck] = f
	k.mu.Unlock()
	f.key, f.err = k.fetch(ctx, kind, ref)
	k.mu.Lock()
	delete(k.inflight, ck)
	if f.err == nil {
		k.remember(ck, f.key)
	}
	k.mu.Unlock()
	close(f.done)
	return f.key, f.err
}

// fetch reads and decrypts the data key ref names in an envelope of kind.
func (k *KMSKeys) fetch(ctx context.Context, kind KeyKind, ref []byte) ([]byte, error) {
	encrypted := ref
	if kind == KindKMSStored {
		var err error
		if encrypted, err = k.store.GetKey(ctx, ref); err != nil {
			return nil, fmt.Errorf("seal.kms data key %x: %w", ref, err)
		}
	}
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    encrypted,
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
	return bytes.Clone(out.Plaintext), nil
}

func cacheKey(kind KeyKind, ref []byte) string { return string(append([]byte{byte(kind)}, ref...)) }

// remember caches a data key; k.mu must be held. When the cache is full it is emptied but
// for the current key: keys are cheap to fetch again and a full cache is rare (one data key
// per cold start, or per hour, of a sealing function).
func (k *KMSKeys) remember(ck string, key []byte) {
	if len(k.cache) >= k.cacheSize {
		clear(k.cache)
		if k.current != nil {
			k.cache[cacheKey(k.Kind(), k.current.Ref)] = k.current.Key
		}
	}
	k.cache[ck] = key
}
