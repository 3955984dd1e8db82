package seal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// keyIDSize is the length of a static key's ID, the first bytes of a hash of the key.
const keyIDSize = 8

// ErrUnknownKey means an envelope names a key this source does not hold.
var ErrUnknownKey = errors.New("sealing key not held")

// StaticKey is a KeySource over AES-256 keys held in configuration (SEAL_LOCAL_KEY), for
// local runs and tests. Each envelope carries the key's ID (8 bytes of SHA-256 of a label and
// the key, which does not reveal it), so a key can be rotated by sealing with a new key while
// the old one is still accepted for opening.
type StaticKey struct {
	current DataKey
	byID    map[string][]byte
}

var _ KeySource = (*StaticKey)(nil)

// NewStaticKey returns a source that seals with key and opens with key or any of older.
// Every key must be exactly 32 bytes.
func NewStaticKey(key []byte, older ...[]byte) (*StaticKey, error) {
	s := &StaticKey{byID: map[string][]byte{}}
	for i, k := range append([][]byte{key}, older...) {
		if len(k) != DataKeySize {
			return nil, fmt.Errorf("seal.static key %d: %d bytes, want %d", i, len(k), DataKeySize)
		}
		k = bytes.Clone(k)
		id := keyID(k)
		if i == 0 {
			s.current = DataKey{Ref: id, Key: k}
		}
		s.byID[string(id)] = k
	}
	return s, nil
}

// ParseStaticKey decodes a standard-base64 32-byte key, as SEAL_LOCAL_KEY holds it, and
// returns a source over it. The error never contains the value.
func ParseStaticKey(b64 string) (*StaticKey, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, errors.New("seal.static key: not standard base64")
	}
	return NewStaticKey(k)
}

// Kind returns KindStatic.
func (s *StaticKey) Kind() KeyKind { return KindStatic }

// Current returns the key to seal with.
func (s *StaticKey) Current(context.Context) (DataKey, error) { return s.current, nil }

// Key returns the key whose ID is ref, or an error wrapping ErrUnknownKey.
func (s *StaticKey) Key(_ context.Context, ref []byte) ([]byte, error) {
	k, ok := s.byID[string(ref)]
	if !ok {
		return nil, fmt.Errorf("seal.static key %x: %w", ref, ErrUnknownKey)
	}
	return k, nil
}

func keyID(key []byte) []byte {
	sum := sha256.Sum256(append([]byte("resetnotify/seal/static-key-id\x00"), key...))
	return sum[:keyIDSize]
}

// Source returns the key source a function runs with: KMS envelope encryption under kmsKeyID
// when it is set (AWS), its data keys kept in store (NewStoredKMSKeys; without a store, in
// every envelope), else the static localKey (local runs and tests).
func Source(client KMSAPI, kmsKeyID string, store KeyStore, localKey []byte) (KeySource, error) {
	if kmsKeyID != "" {
		if store == nil {
			return NewKMSKeys(client, kmsKeyID), nil
		}
		return NewStoredKMSKeys(client, kmsKeyID, store, 0), nil
	}
	keys, err := NewStaticKey(localKey)
	if err != nil {
		return nil, fmt.Errorf("seal.source: %w", err)
	}
	return keys, nil
}
