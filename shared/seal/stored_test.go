package seal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/seal"
)

// memStore is an in-memory seal.KeyStore that counts its calls.
type memStore struct {
	mu         sync.Mutex
	keys       map[string][]byte
	expires    map[string]time.Time
	puts, gets int
	err        error
	// delay is how long a get takes.
	delay time.Duration
}

func newMemStore() *memStore {
	return &memStore{keys: map[string][]byte{}, expires: map[string]time.Time{}}
}

func (m *memStore) PutKey(_ context.Context, id, encrypted []byte, expiresAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.err != nil {
		return m.err
	}
	if _, ok := m.keys[string(id)]; ok {
		return fmt.Errorf("key %x already stored", id)
	}
	m.keys[string(id)], m.expires[string(id)] = bytes.Clone(encrypted), expiresAt
	return nil
}

func (m *memStore) GetKey(_ context.Context, id []byte) ([]byte, error) {
	time.Sleep(m.delay)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.err != nil {
		return nil, m.err
	}
	k, ok := m.keys[string(id)]
	if !ok {
		return nil, fmt.Errorf("key %x: %w", id, seal.ErrUnknownKey)
	}
	return k, nil
}

func (m *memStore) calls() (puts, gets int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts, m.gets
}

// refOf returns an envelope's key kind and reference.
func refOf(t *testing.T, sealed []byte) (seal.KeyKind, []byte) {
	t.Helper()
	n := int(binary.BigEndian.Uint16(sealed[2:4]))
	return seal.KeyKind(sealed[1]), sealed[4 : 4+n]
}

// TestStoredKeysKeepTheEnvelopeShort checks what the deployed source writes: a 16-byte ID in
// every envelope, the KMS-encrypted data key once in the store, and an opener in another
// process that reads it from the store and decrypts it once.
func TestStoredKeysKeepTheEnvelopeShort(t *testing.T) {
	ctx := context.Background()
	fake, store := newFakeKMS(t), newMemStore()
	writer := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0))
	var envelopes [][]byte
	for range 10 {
		s, err := writer.Seal(ctx, idemKey, secret)
		if err != nil {
			t.Fatal(err)
		}
		envelopes = append(envelopes, s)
	}
	kind, ref := refOf(t, envelopes[0])
	if kind != seal.KindKMSStored || len(ref) != seal.KeyRefSize {
		t.Fatalf("envelope kind %s with a %d-byte reference, want kms-stored and %d bytes", kind, len(ref), seal.KeyRefSize)
	}
	embedded, err := seal.New(seal.NewKMSKeys(fake, fakeKeyARN)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	_, blob := refOf(t, embedded)
	if got, want := len(envelopes[0]), len(embedded)-len(blob)+seal.KeyRefSize; got != want {
		t.Errorf("stored-key envelope is %d bytes, want %d (the embedded one, %d, less its %d-byte data key plus the ID)", got, want, len(embedded), len(blob))
	}
	if puts, gets := store.calls(); puts != 1 || gets != 0 {
		t.Errorf("10 seals: %d puts and %d gets, want one put", puts, gets)
	}
	if got := fake.calls(); got != (kmsCalls{generate: 2}) {
		t.Errorf("KMS calls %+v, want one GenerateDataKey per source", got)
	}
	stored, ok := store.keys[string(ref)]
	if !ok || bytes.Contains(stored, ref) || len(stored) < 32 {
		t.Errorf("the store holds %x under the envelope's ID, want the encrypted data key", stored)
	}

	reader := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0))
	for _, e := range envelopes {
		got, err := reader.Open(ctx, idemKey, e)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(secret, got); diff != "" {
			t.Fatalf("opened (-want +got):\n%s", diff)
		}
	}
	if _, gets := store.calls(); gets != 1 {
		t.Errorf("opening 10 envelopes of one key: %d gets, want 1 (then cached)", gets)
	}
	if got := fake.calls(); got.decrypt != 1 {
		t.Errorf("opening 10 envelopes of one key: %d Decrypt calls, want 1", got.decrypt)
	}
}

// TestStoredKeysOpenEmbeddedEnvelopes is the upgrade path: a record sealed before the key
// store, its encrypted data key inside the envelope, still opens with the deployed source.
func TestStoredKeysOpenEmbeddedEnvelopes(t *testing.T) {
	ctx := context.Background()
	fake, store := newFakeKMS(t), newMemStore()
	old, err := seal.New(seal.NewKMSKeys(fake, fakeKeyARN)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	if kind, _ := refOf(t, old); kind != seal.KindKMS {
		t.Fatalf("old envelope kind %s", kind)
	}
	got, err := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0)).Open(ctx, idemKey, old)
	if err != nil {
		t.Fatalf("the deployed source cannot open an envelope that carries its data key: %v", err)
	}
	if diff := cmp.Diff(secret, got); diff != "" {
		t.Errorf("opened (-want +got):\n%s", diff)
	}
	if _, gets := store.calls(); gets != 0 {
		t.Errorf("opening an embedded-key envelope read the store %d times", gets)
	}
	// Without a store, a stored-key envelope cannot be opened: it fails closed.
	sealed, err := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seal.New(seal.NewKMSKeys(fake, fakeKeyARN)).Open(ctx, idemKey, sealed); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("a store-less source opening a stored-key envelope: err = %v, want ErrOpen", err)
	}
}

// TestStoredKeysRotate checks the bounded schedule: a process seals with one data key for
// maxAge, then makes and stores the next; envelopes of the old key still open; each stored
// key expires KeyRetention after its last possible seal.
func TestStoredKeysRotate(t *testing.T) {
	ctx := context.Background()
	fake, store := newFakeKMS(t), newMemStore()
	now := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	src := seal.NewStoredKMSKeys(fake, fakeKeyARN, store, time.Hour).WithClock(func() time.Time { return now })
	box := seal.New(src)
	first, err := box.Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Minute)
	same, err := box.Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	next, err := box.Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	_, r1 := refOf(t, first)
	_, r2 := refOf(t, same)
	_, r3 := refOf(t, next)
	if !bytes.Equal(r1, r2) || bytes.Equal(r1, r3) {
		t.Errorf("references %x, %x, %x: want the first key for an hour, then another", r1, r2, r3)
	}
	if puts, _ := store.calls(); puts != 2 {
		t.Errorf("%d puts, want 2 (one per data key)", puts)
	}
	start := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	if got, want := store.expires[string(r1)], start.Add(time.Hour+seal.KeyRetention); !got.Equal(want) {
		t.Errorf("first key expires %v, want %v", got, want)
	}
	for _, e := range [][]byte{first, next} {
		if _, err := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0)).Open(ctx, idemKey, e); err != nil {
			t.Errorf("open after rotation: %v", err)
		}
	}
}

// TestStoredKeysFailures: a failed put seals nothing (and is retried), a store that does not
// hold the key fails closed (ErrOpen, permanent), a store that fails is a transient error.
func TestStoredKeysFailures(t *testing.T) {
	ctx := context.Background()
	fake, store := newFakeKMS(t), newMemStore()
	store.err = errors.New("throttled")
	box := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0))
	if _, err := box.Seal(ctx, idemKey, secret); err == nil {
		t.Fatal("Seal succeeded although its data key could not be stored")
	}
	store.err = nil
	sealed, err := box.Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatalf("Seal after the store recovered: %v", err)
	}
	store.err = errors.New("throttled")
	if _, err := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0)).Open(ctx, idemKey, sealed); err == nil || errors.Is(err, seal.ErrOpen) {
		t.Errorf("Open with the store failing: err = %v, want a transient error, not ErrOpen", err)
	}
	store.err = nil
	if _, err := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, newMemStore(), 0)).Open(ctx, idemKey, sealed); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("Open with a store that lacks the key: err = %v, want ErrOpen", err)
	}
	// A key swapped in the store (another data key's ciphertext under this ID) fails closed.
	other, err := seal.New(seal.NewKMSKeys(fake, fakeKeyARN)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	_, id := refOf(t, sealed)
	_, blob := refOf(t, other)
	swapped := newMemStore()
	swapped.keys[string(id)] = blob
	if _, err := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, swapped, 0)).Open(ctx, idemKey, sealed); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("Open with a swapped data key: err = %v, want ErrOpen", err)
	}
}

// TestConcurrentOpensFetchOnce: a batch's messages opened at once on a cold start (dispatch
// handles a batch concurrently) read the store and call Decrypt once between them.
func TestConcurrentOpensFetchOnce(t *testing.T) {
	ctx := context.Background()
	fake, store := newFakeKMS(t), newMemStore()
	sealed, err := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0)).Seal(ctx, idemKey, secret)
	if err != nil {
		t.Fatal(err)
	}
	store.delay = 50 * time.Millisecond
	reader := seal.New(seal.NewStoredKMSKeys(fake, fakeKeyARN, store, 0))
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := reader.Open(ctx, idemKey, sealed)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, gets := store.calls(); gets != 1 {
		t.Errorf("10 concurrent opens: %d store reads, want 1", gets)
	}
	if got := fake.calls(); got.decrypt != 1 {
		t.Errorf("10 concurrent opens: %d Decrypt calls, want 1", got.decrypt)
	}
}
