package seal_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
)

var secret = notify.Secret{
	To:     "+447700900123",
	Params: map[string]string{"reset_url": "https://shop.example/reset?token=s3cr3t-t0k3n"},
	Locale: "en-GB",
}

const idemKey = "evt-42:sms:password_reset"

func randomKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, seal.DataKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func staticSource(t *testing.T, key []byte, older ...[]byte) *seal.StaticKey {
	t.Helper()
	s, err := seal.NewStaticKey(key, older...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sources returns one source of each kind.
func sources(t *testing.T) map[string]func() seal.KeySource {
	t.Helper()
	static := staticSource(t, randomKey(t))
	fake := newFakeKMS(t)
	store := newMemStore()
	return map[string]func() seal.KeySource{
		"static": func() seal.KeySource { return static },
		"kms":    func() seal.KeySource { return seal.NewKMSKeys(fake, fakeKeyARN) },
		"kms-stored": func() seal.KeySource {
			return seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0)
		},
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			sealer := seal.New(src())
			sealed, err := sealer.Seal(ctx, idemKey, secret)
			if err != nil {
				t.Fatal(err)
			}
			// Another process (a fresh source over the same keys) opens it.
			got, err := seal.New(src()).Open(ctx, idemKey, sealed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(secret, got); diff != "" {
				t.Errorf("Open(Seal(s)) differs (-want +got):\n%s", diff)
			}
			again, err := sealer.Seal(ctx, idemKey, secret)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(sealed, again) {
				t.Error("two seals of the same secret are identical; the nonce is not random")
			}
		})
	}
}

func TestCiphertextHidesThePlaintext(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			sealed, err := seal.New(src()).Seal(ctx, idemKey, secret)
			if err != nil {
				t.Fatal(err)
			}
			needles := []string{secret.To, strings.TrimPrefix(secret.To, "+"), "s3cr3t-t0k3n", secret.Params["reset_url"], "reset_url", idemKey}
			for _, n := range needles {
				for _, enc := range []string{n, base64.StdEncoding.EncodeToString([]byte(n))} {
					if bytes.Contains(sealed, []byte(enc)) {
						t.Errorf("sealed payload contains %q", enc)
					}
				}
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	keyA, keyB := randomKey(t), randomKey(t)
	sealedA, err := seal.New(staticSource(t, keyA)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeKMS(t)
	cases := []struct {
		name   string
		opener *seal.Box
		key    string
		sealed []byte
	}{
		{"other idempotency key", seal.New(staticSource(t, keyA)), idemKey + "x", sealedA},
		{"other static key", seal.New(staticSource(t, keyB)), idemKey, sealedA},
		{"static envelope opened by a KMS box", seal.New(seal.NewKMSKeys(fake, fakeKeyARN)), idemKey, sealedA},
		{"empty", seal.New(staticSource(t, keyA)), idemKey, nil},
		{"header only", seal.New(staticSource(t, keyA)), idemKey, sealedA[:12]},
		{"truncated tag", seal.New(staticSource(t, keyA)), idemKey, sealedA[:len(sealedA)-1]},
		{"unknown version", seal.New(staticSource(t, keyA)), idemKey, append([]byte{9}, sealedA[1:]...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.opener.Open(ctx, tc.key, tc.sealed)
			if !errors.Is(err, seal.ErrOpen) {
				t.Fatalf("Open = %v, %v; want an error wrapping ErrOpen", got, err)
			}
			if strings.Contains(err.Error(), secret.To) {
				t.Errorf("error %q contains the phone number", err)
			}
		})
	}
}

func TestTamperedEnvelopeFails(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			box := seal.New(src())
			sealed, err := box.Seal(ctx, idemKey, secret)
			if err != nil {
				t.Fatal(err)
			}
			for i := range sealed {
				tampered := bytes.Clone(sealed)
				tampered[i] ^= 0x01
				if _, err := seal.New(src()).Open(ctx, idemKey, tampered); !errors.Is(err, seal.ErrOpen) {
					t.Fatalf("byte %d of %d flipped: Open err = %v, want ErrOpen", i, len(sealed), err)
				}
			}
		})
	}
}

func TestStaticKeyRotation(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := randomKey(t), randomKey(t)
	sealedOld, err := seal.New(staticSource(t, oldKey)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	rotated := seal.New(staticSource(t, newKey, oldKey))
	if _, err := rotated.Open(ctx, idemKey, sealedOld); err != nil {
		t.Fatalf("rotated box cannot open an envelope of the older key: %v", err)
	}
	sealedNew, err := rotated.Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seal.New(staticSource(t, oldKey)).Open(ctx, idemKey, sealedNew); !errors.Is(err, seal.ErrUnknownKey) {
		t.Errorf("old-key box opening a new-key envelope: err = %v, want ErrUnknownKey", err)
	}
}

func TestStaticKeyConfiguration(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	cases := []struct {
		name  string
		value string
		ok    bool
	}{
		{"32 bytes", good, true},
		{"32 bytes with newline", good + "\n", true},
		{"16 bytes", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 16)), false},
		{"33 bytes", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 33)), false},
		{"empty", "", false},
		{"not base64", "not*base64*at*all*" + good, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := seal.ParseStaticKey(tc.value)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseStaticKey: err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && tc.value != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.value)) {
				t.Errorf("error %q repeats the key", err)
			}
		})
	}
}

func TestKMSCallsAndCache(t *testing.T) {
	ctx := context.Background()
	fake := newFakeKMS(t)
	writer := seal.New(seal.NewKMSKeys(fake, fakeKeyARN))
	var envelopes [][]byte
	for range 10 {
		s, err := writer.Seal(ctx, idemKey, secret)
		if err != nil {
			t.Fatal(err)
		}
		envelopes = append(envelopes, s)
	}
	if got := fake.calls(); got != (kmsCalls{generate: 1}) {
		t.Errorf("10 seals made KMS calls %+v, want one GenerateDataKey", got)
	}
	// The sealing process knows its own data key: opening costs no KMS call.
	if _, err := writer.Open(ctx, idemKey, envelopes[0]); err != nil {
		t.Fatal(err)
	}
	if got := fake.calls(); got != (kmsCalls{generate: 1}) {
		t.Errorf("opening our own envelope made KMS calls %+v", got)
	}

	// A second writer (another cold start) has its own data key.
	other, err := seal.New(seal.NewKMSKeys(fake, fakeKeyARN)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	reader := seal.New(seal.NewKMSKeys(fake, fakeKeyARN))
	for _, e := range append(envelopes, other) {
		if _, err := reader.Open(ctx, idemKey, e); err != nil {
			t.Fatal(err)
		}
	}
	if got := fake.calls(); got != (kmsCalls{generate: 2, decrypt: 2}) {
		t.Errorf("reader opening 11 envelopes of 2 data keys: KMS calls %+v, want 2 GenerateDataKey and 2 Decrypt in all", got)
	}
	if ctxs := fake.contexts(); len(ctxs) != 1 || ctxs[0]["app"] != "resetnotify" {
		t.Errorf("encryption contexts used: %v, want one naming the app", ctxs)
	}
}

func TestKMSFailures(t *testing.T) {
	ctx := context.Background()
	fake := newFakeKMS(t)
	sealed, err := seal.New(seal.NewKMSKeys(fake, fakeKeyARN)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}

	fake.fail(errors.New("kms unavailable"))
	src := seal.NewKMSKeys(fake, fakeKeyARN)
	box := seal.New(src)
	if _, err := box.Open(ctx, idemKey, sealed); err == nil || errors.Is(err, seal.ErrOpen) {
		t.Errorf("Open with KMS down: err = %v, want a transient error that is not ErrOpen", err)
	}
	if _, err := box.Seal(ctx, idemKey, secret); err == nil {
		t.Error("Seal with KMS down succeeded")
	}

	fake.fail(nil)
	if _, err := box.Seal(ctx, idemKey, secret); err != nil {
		t.Errorf("Seal after KMS recovered: %v (a failed GenerateDataKey must not be remembered)", err)
	}
	if _, err := box.Open(ctx, idemKey, sealed); err != nil {
		t.Errorf("Open after KMS recovered: %v", err)
	}
}

func TestDestinationFingerprint(t *testing.T) {
	pepper := []byte("pepper-0123456789abcdef")
	f, err := seal.NewFingerprinter(pepper)
	if err != nil {
		t.Fatal(err)
	}
	g, err := seal.NewFingerprinter([]byte("another-pepper-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	const number = "+447700900123"
	fp := f.DestinationFP(number)

	// HMAC-SHA256(pepper, number), first 16 bytes, hex; computed independently.
	if want := "ff00b4a329e1d8ad39e73268a92310de"; fp != want {
		t.Errorf("DestinationFP = %s, want %s", fp, want)
	}
	if len(fp) != 2*seal.FingerprintSize {
		t.Errorf("fingerprint length %d, want %d", len(fp), 2*seal.FingerprintSize)
	}
	if again := f.DestinationFP(number); again != fp {
		t.Errorf("not stable: %s then %s", fp, again)
	}
	if other := f.DestinationFP("+447700900124"); other == fp {
		t.Error("two numbers share a fingerprint")
	}
	if keyed := g.DestinationFP(number); keyed == fp {
		t.Error("fingerprint does not depend on the pepper")
	}
	if strings.Contains(fp, "7700900123") {
		t.Error("fingerprint contains the number")
	}
	if _, err := seal.NewFingerprinter([]byte("short")); err == nil {
		t.Error("a 5-byte pepper was accepted")
	}
}

// fakeKMS is an in-memory KMS with one symmetric key. It wraps data keys with AES-GCM under a
// master key, using the encryption context as associated data, as KMS binds it.
type fakeKMS struct {
	master cipher.AEAD

	mu   sync.Mutex
	n    kmsCalls
	err  error
	ctxs []map[string]string
}

type kmsCalls struct{ generate, decrypt int }

const fakeKeyARN = "arn:aws:kms:eu-west-1:111122223333:key/0b0b0b0b-1111-2222-3333-444455556666"

func newFakeKMS(t *testing.T) *fakeKMS {
	block, err := aes.NewCipher(randomKey(t))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeKMS{master: aead}
}

func (f *fakeKMS) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeKMS) calls() kmsCalls {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// contexts returns the distinct encryption contexts seen.
func (f *fakeKMS) contexts() []map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]string
	for _, c := range f.ctxs {
		if !slices.ContainsFunc(out, func(o map[string]string) bool { return maps.Equal(o, c) }) {
			out = append(out, c)
		}
	}
	return out
}

func contextAAD(c map[string]string) []byte {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(c)) {
		b = append(append(append(append(b, k...), 0), c[k]...), 0)
	}
	return b
}

func (f *fakeKMS) GenerateDataKey(_ context.Context, in *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n.generate++
	f.ctxs = append(f.ctxs, in.EncryptionContext)
	if f.err != nil {
		return nil, f.err
	}
	if aws.ToString(in.KeyId) != fakeKeyARN || in.KeySpec != kmstypes.DataKeySpecAes256 {
		return nil, &kmstypes.NotFoundException{Message: aws.String("no such key or spec")}
	}
	plain := make([]byte, 32)
	nonce := make([]byte, f.master.NonceSize())
	_, _ = rand.Read(plain)
	_, _ = rand.Read(nonce)
	blob := f.master.Seal(nonce, nonce, plain, contextAAD(in.EncryptionContext))
	return &kms.GenerateDataKeyOutput{CiphertextBlob: blob, Plaintext: plain, KeyId: in.KeyId}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n.decrypt++
	f.ctxs = append(f.ctxs, in.EncryptionContext)
	if f.err != nil {
		return nil, f.err
	}
	ns := f.master.NonceSize()
	invalid := &kmstypes.InvalidCiphertextException{Message: aws.String("invalid ciphertext")}
	if len(in.CiphertextBlob) < ns {
		return nil, invalid
	}
	plain, err := f.master.Open(nil, in.CiphertextBlob[:ns], in.CiphertextBlob[ns:], contextAAD(in.EncryptionContext))
	if err != nil {
		return nil, invalid
	}
	return &kms.DecryptOutput{Plaintext: plain, KeyId: aws.String(fakeKeyARN)}, nil
}
