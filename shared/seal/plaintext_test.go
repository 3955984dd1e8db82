package seal_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
)

// TestCompactPlaintext checks that Seal writes version 2 envelopes whose plaintext is the
// compact form (shorter than the JSON by the size of its syntax), that every secret round
// trips, one too long for the compact form in a version 1 envelope, and that an envelope
// sealed before (version 1, JSON) still opens.
func TestCompactPlaintext(t *testing.T) {
	ctx := context.Background()
	key := randomKey(t)
	box := seal.New(staticSource(t, key))
	for _, s := range []notify.Secret{
		secret,
		{To: "+12125550123", Locale: "en", Params: map[string]string{"code": "123456"}},
		{To: "+12125550123", Locale: "en", Params: map[string]string{"a": "", "b": strings.Repeat("x", 1024)}},
		{To: "+12125550123", Locale: "en"},
	} {
		sealed, err := box.Seal(ctx, idemKey, s)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := json.Marshal(s)
		if sealed[0] != seal.Version || len(sealed) >= 4+8+12+len(plain)+16 {
			t.Errorf("%d-byte envelope of version %d for a %d-byte JSON secret, want version %d and less", len(sealed), sealed[0], len(plain), seal.Version)
		}
		got, err := box.Open(ctx, idemKey, sealed)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	long := notify.Secret{To: "+12125550123", Locale: strings.Repeat("l", 300), Params: map[string]string{"code": "1"}}
	sealed, err := box.Seal(ctx, idemKey, long)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := box.Open(ctx, idemKey, sealed); err != nil || sealed[0] != 1 || got.Locale != long.Locale {
		t.Errorf("a secret too long for the compact form: version %d, %v", sealed[0], err)
	}
	// Version 1, as Seal wrote it before: JSON plaintext.
	old := sealV1(t, key, secret)
	if got, err := box.Open(ctx, idemKey, old); err != nil || !cmp.Equal(secret, got) {
		t.Errorf("a version 1 envelope opened as %+v, %v", got, err)
	}
}

// sealV1 seals s as version 1 envelopes were: the static key's ID, JSON plaintext.
func sealV1(t *testing.T, key []byte, s notify.Secret) []byte {
	t.Helper()
	dk, err := staticSource(t, key).Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id := dk.Ref
	header := []byte{1, byte(seal.KindStatic), 0, 0}
	binary.BigEndian.PutUint16(header[2:], uint16(len(id)))
	header = append(header, id...)
	nonce := make([]byte, 12)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte{}, header...), nonce...)
	return aead.Seal(out, nonce, plain, append(append([]byte{}, header...), idemKey...))
}
