// Package seal encrypts the secret part of a notification request ({to, params, locale}) at
// rest with AES-256-GCM, bound to the record's idempotency key, and computes the keyed
// destination fingerprint that is safe to store and audit.
//
// A sealed payload is a self-describing envelope, so that keys can rotate and a reader can
// tell which key sealed it:
//
//	offset  size  field
//	0       1     format version: 2 (1 before: JSON plaintext, still read; see plaintext.go)
//	1       1     key kind (1 static, 2 KMS with the data key inside, 3 KMS with a stored data key)
//	2       2     length n of the key reference, big-endian
//	4       n     key reference: a static key's 8-byte ID; the KMS-encrypted data key (kind 2,
//	              ~184 bytes, written before the key store and still opened); or the 16-byte
//	              random ID of a data key whose KMS-encrypted form is in the key store (kind 3)
//	4+n     12    GCM nonce, random
//	16+n    rest  ciphertext and 16-byte GCM tag of the notify.Secret (plaintext.go)
//
// The associated data is the envelope header (bytes 0 to 4+n) followed by the idempotency
// key, so a payload cannot be moved to another record, nor its header altered, without Open
// failing. Keys come from a KeySource: StaticKey for local runs, KMSKeys (envelope encryption
// with one data key per cold start and hour, kept once in the seal-keys table) in AWS.
package seal

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Version is the envelope format written by Seal: the compact plaintext of plaintext.go.
const Version byte = 2

// KeyKind identifies the KeySource that sealed an envelope.
type KeyKind byte

// The key kinds.
const (
	KindStatic KeyKind = 1
	// KindKMS envelopes carry their KMS-encrypted data key (the format before the key store).
	KindKMS KeyKind = 2
	// KindKMSStored envelopes carry a 16-byte ID of a data key held once in a KeyStore.
	KindKMSStored KeyKind = 3
)

func (k KeyKind) String() string {
	switch k {
	case KindStatic:
		return "static"
	case KindKMS:
		return "kms"
	case KindKMSStored:
		return "kms-stored"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// DataKeySize is the size of every data key: AES-256.
const DataKeySize = 32

const (
	headerFixed = 4
	nonceSize   = 12
	tagSize     = 16
	maxRefLen   = 1<<16 - 1
)

// ErrOpen means a payload could not be opened: it is malformed, was sealed under another
// idempotency key or data key, or was altered. The reason is deliberately not more precise.
var ErrOpen = errors.New("sealed payload cannot be opened")

// DataKey is a plaintext data key and the reference that recovers it.
type DataKey struct {
	// Ref is stored in each envelope; it must not reveal Key.
	Ref []byte
	// Key is the 32-byte AES-256 key.
	Key []byte
}

// KeySource supplies the data keys of one key kind.
type KeySource interface {
	// Kind is written into every envelope sealed with this source.
	Kind() KeyKind
	// Current returns the data key to seal with now.
	Current(ctx context.Context) (DataKey, error)
	// Key returns the data key named by ref, a Ref that Current returned, possibly in another
	// process.
	Key(ctx context.Context, ref []byte) ([]byte, error)
}

// Box seals and opens notify.Secret values with the data keys of one KeySource.
type Box struct {
	src KeySource
}

var (
	_ notify.Sealer = (*Box)(nil)
	_ notify.Opener = (*Box)(nil)
)

// New returns a Box that takes its keys from src.
func New(src KeySource) *Box { return &Box{src: src} }

// Seal encrypts s under the current data key, bound to the idempotency key key.
func (b *Box) Seal(ctx context.Context, key string, s notify.Secret) ([]byte, error) {
	dk, err := b.src.Current(ctx)
	if err != nil {
		return nil, fmt.Errorf("seal.seal %s: data key: %w", key, err)
	}
	if len(dk.Ref) > maxRefLen {
		return nil, fmt.Errorf("seal.seal %s: key reference of %d bytes is too long", key, len(dk.Ref))
	}
	aead, err := newAEAD(dk.Key)
	if err != nil {
		return nil, fmt.Errorf("seal.seal %s: %w", key, err)
	}
	plain, version, err := encodeSecret(s)
	if err != nil {
		return nil, fmt.Errorf("seal.seal %s: encode: %w", key, err)
	}
	hlen := headerFixed + len(dk.Ref)
	out := make([]byte, hlen+nonceSize, hlen+nonceSize+len(plain)+tagSize)
	out[0] = version
	out[1] = byte(b.src.Kind())
	binary.BigEndian.PutUint16(out[2:4], uint16(len(dk.Ref)))
	copy(out[headerFixed:], dk.Ref)
	nonce := out[hlen : hlen+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal.seal %s: nonce: %w", key, err)
	}
	return aead.Seal(out, nonce, plain, aad(out[:hlen], key)), nil
}

// Open decrypts an envelope made by Seal under the same idempotency key. Any mismatch or
// alteration, including a key reference the source does not know (ErrUnknownKey), gives an
// error wrapping ErrOpen; any other failure to obtain the data key (KMS unavailable) is
// returned wrapped as it is, so a caller can tell a permanent failure from a transient one.
func (b *Box) Open(ctx context.Context, key string, sealed []byte) (notify.Secret, error) {
	if len(sealed) < headerFixed {
		return notify.Secret{}, fmt.Errorf("seal.open %s: short envelope: %w", key, ErrOpen)
	}
	if sealed[0] != Version && sealed[0] != versionJSON {
		return notify.Secret{}, fmt.Errorf("seal.open %s: envelope version %d: %w", key, sealed[0], ErrOpen)
	}
	kind := KeyKind(sealed[1])
	multi, _ := b.src.(KindOpener)
	if kind != b.src.Kind() && (multi == nil || !multi.Opens(kind)) {
		return notify.Secret{}, fmt.Errorf("seal.open %s: sealed with a %s key, this box holds %s keys: %w", key, kind, b.src.Kind(), ErrOpen)
	}
	hlen := headerFixed + int(binary.BigEndian.Uint16(sealed[2:4]))
	if len(sealed) < hlen+nonceSize+tagSize {
		return notify.Secret{}, fmt.Errorf("seal.open %s: short envelope: %w", key, ErrOpen)
	}
	var dataKey []byte
	var err error
	if multi != nil {
		dataKey, err = multi.KeyOf(ctx, kind, sealed[headerFixed:hlen])
	} else {
		dataKey, err = b.src.Key(ctx, sealed[headerFixed:hlen])
	}
	if errors.Is(err, ErrUnknownKey) {
		return notify.Secret{}, fmt.Errorf("seal.open %s: %w: %w", key, ErrOpen, err)
	}
	if err != nil {
		return notify.Secret{}, fmt.Errorf("seal.open %s: data key: %w", key, err)
	}
	aead, err := newAEAD(dataKey)
	if err != nil {
		return notify.Secret{}, fmt.Errorf("seal.open %s: %w", key, err)
	}
	nonce := sealed[hlen : hlen+nonceSize]
	plain, err := aead.Open(nil, nonce, sealed[hlen+nonceSize:], aad(sealed[:hlen], key))
	if err != nil {
		return notify.Secret{}, fmt.Errorf("seal.open %s: %w", key, ErrOpen)
	}
	s, err := decodeSecret(sealed[0], plain)
	if err != nil {
		// The GCM tag was valid, so this is a bug in Seal, not tampering; never quote plain.
		return notify.Secret{}, fmt.Errorf("seal.open %s: decode: %w", key, ErrOpen)
	}
	return s, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != DataKeySize {
		return nil, fmt.Errorf("data key is %d bytes, want %d", len(key), DataKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	return aead, nil
}

// aad is the associated data: the envelope header, then the idempotency key.
func aad(header []byte, key string) []byte {
	out := make([]byte, 0, len(header)+len(key))
	return append(append(out, header...), key...)
}
