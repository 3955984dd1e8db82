package seal_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/seal"
)

var (
	fpKeyA = []byte("stack-a-request-fingerprint-key-0123456789")
	fpKeyB = []byte("stack-b-request-fingerprint-key-0123456789")
	fpT0   = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
)

// codeRequest is a one-time-code request with a 6-digit code; the attacker knows every field
// but the code (the number, the event, the expiry are in other systems or on the record).
func codeRequest(code string) notify.Request {
	return notify.Request{
		IdempotencyKey: "order-7781-otp", EventID: "evt-7781", Channel: notify.ChannelSMS,
		Purpose: notify.PurposeOneTimeCode, To: "+447700900123", Locale: "en",
		Params: map[string]string{notify.ParamCode: code}, ExpiresAt: fpT0.Add(10 * time.Minute),
	}
}

// admit stores req through notify.Service with a request fingerprinter under key and returns
// the stored record, as someone reading the table (or its stream, backups or PITR) sees it.
func admit(t *testing.T, store *notifytest.Store, key []byte, req notify.Request) notify.Record {
	t.Helper()
	fps, err := seal.NewRequestFingerprinter(key)
	if err != nil {
		t.Fatal(err)
	}
	in := &notify.Service{
		Store: store, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{}, Fingerprints: fps,
		Queue: &notifytest.Queue{}, Clock: notifytest.NewClock(fpT0), Policy: notify.DefaultPolicy(),
		NewID: notifytest.IDs("n"),
	}
	out, err := in.Submit(context.Background(), req)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return out.Record
}

// bruteForce tries every 6-digit code: match says whether the fingerprint of a candidate
// canonical form is the stored one. Like a real attacker it builds the canonical form once
// and only counts the six digits up in place.
func bruteForce(match func(canonical []byte) bool) []string {
	canonical := codeRequest("000000").Canonical()
	at := bytes.Index(canonical, []byte(`"code":"000000"`)) + len(`"code":"`)
	digits := canonical[at : at+6]
	var found []string
	for range 1_000_000 {
		if match(canonical) {
			found = append(found, string(digits))
		}
		for i := 5; i >= 0; i-- { // the next code: 000000, 000001, ..., 999999
			if digits[i] < '9' {
				digits[i]++
				break
			}
			digits[i] = '0'
		}
	}
	return found
}

// storedBytes decodes a stored fingerprint: the keyed form (base64url behind its prefix) or
// the bare hex of an unkeyed one.
func storedBytes(stored string) []byte {
	if b64, ok := strings.CutPrefix(stored, seal.RequestFPPrefix); ok {
		b, _ := base64.RawURLEncoding.DecodeString(b64)
		return b
	}
	b, _ := hex.DecodeString(stored)
	return b
}

// plainSHA256 matches a stored fingerprint that would be the unkeyed SHA-256 of the canonical
// form (truncated as stored), bare or behind the keyed form's prefix.
func plainSHA256(stored string) func([]byte) bool {
	want := storedBytes(stored)
	return func(c []byte) bool {
		sum := sha256.Sum256(c)
		return len(want) > 0 && bytes.Equal(sum[:len(want)], want)
	}
}

// keyedWith matches a stored fingerprint that would be the HMAC-SHA256 under key (truncated
// as stored).
func keyedWith(key []byte, stored string) func([]byte) bool {
	want := storedBytes(stored)
	m := hmac.New(sha256.New, key)
	var sum []byte
	return func(c []byte) bool {
		m.Reset()
		m.Write(c)
		sum = m.Sum(sum[:0])
		return len(want) > 0 && bytes.Equal(sum[:len(want)], want)
	}
}

func TestRequestFingerprintResistsBruteForce(t *testing.T) {
	const code = "482913"
	rec := admit(t, notifytest.NewStore(), fpKeyA, codeRequest(code))
	stored := rec.RequestFingerprint
	if strings.Contains(stored, code) {
		t.Fatalf("fingerprint %q holds the code", stored)
	}
	for _, tc := range []struct {
		name  string
		match func([]byte) bool
	}{
		{"plain SHA-256", plainSHA256(stored)},
		{"HMAC under a wrong key", keyedWith(fpKeyB, stored)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if found := bruteForce(tc.match); len(found) != 0 {
				t.Errorf("recovered %v from the stored fingerprint", found)
			}
		})
	}

	// The attack itself works: against the unkeyed form records used to hold, and for whoever
	// holds the key, it finds the code among the million candidates.
	legacy := sha256.Sum256(codeRequest(code).Canonical())
	if found := bruteForce(plainSHA256(hex.EncodeToString(legacy[:]))); len(found) != 1 || found[0] != code {
		t.Errorf("brute force of an unkeyed fingerprint found %v, want [%s]", found, code)
	}
	if found := bruteForce(keyedWith(fpKeyA, stored)); len(found) != 1 || found[0] != code {
		t.Errorf("brute force with the right key found %v, want [%s]", found, code)
	}
}

func TestRequestFingerprintDependsOnTheKey(t *testing.T) {
	req := codeRequest("482913")
	a := admit(t, notifytest.NewStore(), fpKeyA, req)
	b := admit(t, notifytest.NewStore(), fpKeyB, req)
	if a.RequestFingerprint == b.RequestFingerprint {
		t.Errorf("two stacks with different keys stored the same fingerprint %q", a.RequestFingerprint)
	}
	again := admit(t, notifytest.NewStore(), fpKeyA, req)
	if again.RequestFingerprint != a.RequestFingerprint {
		t.Errorf("the same key gave %q and %q", a.RequestFingerprint, again.RequestFingerprint)
	}
	if !strings.HasPrefix(a.RequestFingerprint, seal.RequestFPPrefix) || len(a.RequestFingerprint) != len(seal.RequestFPPrefix)+22 {
		t.Errorf("fingerprint %q is not %s and 128 bits of HMAC-SHA256 in base64url", a.RequestFingerprint, seal.RequestFPPrefix)
	}
}

func TestRequestFingerprintSameRequest(t *testing.T) {
	fps, err := seal.NewRequestFingerprinter(fpKeyA)
	if err != nil {
		t.Fatal(err)
	}
	other, err := seal.NewRequestFingerprinter(fpKeyB)
	if err != nil {
		t.Fatal(err)
	}
	canonical := codeRequest("482913").Canonical()
	changed := codeRequest("482914").Canonical()
	legacy := sha256.Sum256(canonical)
	tests := []struct {
		name   string
		stored string
		c      []byte
		want   bool
	}{
		{"keyed, same request", fps.RequestFP(canonical), canonical, true},
		{"keyed, another request", fps.RequestFP(canonical), changed, false},
		{"keyed under another key", other.RequestFP(canonical), canonical, false},
		// The unkeyed form is past its sunset: anyone who writes the table could forge it.
		{"unkeyed, same request", hex.EncodeToString(legacy[:]), canonical, false},
		// Keyed before fingerprints were truncated: the whole HMAC in hex.
		{"keyed in hex, same request", "hmac-sha256:" + hex.EncodeToString(macOf(fpKeyA, canonical)), canonical, true},
		{"keyed in hex, another request", "hmac-sha256:" + hex.EncodeToString(macOf(fpKeyA, canonical)), changed, false},
		{"keyed in hex under another key", "hmac-sha256:" + hex.EncodeToString(macOf(fpKeyB, canonical)), canonical, false},
		{"unkeyed, another request", hex.EncodeToString(legacy[:]), changed, false},
		{"prefix with bad base64", seal.RequestFPPrefix + "!!", canonical, false},
		{"old prefix with bad hex", "hmac-sha256:zz", canonical, false},
		{"empty", "", canonical, false},
		{"truncated", fps.RequestFP(canonical)[:15], canonical, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fps.SameRequest(tc.stored, tc.c); got != tc.want {
				t.Errorf("SameRequest = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := seal.NewRequestFingerprinter([]byte("too-short-key")); err == nil {
		t.Error("a 13-byte key was accepted")
	}
}

// TestKeyReuseWithKeyedFingerprints checks the 422 path end to end through notify.Service: the
// same request under the same key replays, another request is refused and changes nothing,
// and a record that holds the old unkeyed fingerprint is refused, past its sunset.
func TestKeyReuseWithKeyedFingerprints(t *testing.T) {
	store := notifytest.NewStore()
	fps, err := seal.NewRequestFingerprinter(fpKeyA)
	if err != nil {
		t.Fatal(err)
	}
	in := &notify.Service{
		Store: store, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{}, Fingerprints: fps,
		Queue: &notifytest.Queue{}, Clock: notifytest.NewClock(fpT0), Policy: notify.DefaultPolicy(),
		NewID: notifytest.IDs("n"),
	}
	ctx := context.Background()
	if _, err := in.Submit(ctx, codeRequest("482913")); err != nil {
		t.Fatal(err)
	}
	replay, err := in.Submit(ctx, codeRequest("482913"))
	if err != nil || !replay.Replayed {
		t.Fatalf("replay: %+v %v", replay, err)
	}
	if _, err := in.Submit(ctx, codeRequest("000001")); !errors.Is(err, notify.ErrKeyReuse) {
		t.Fatalf("another request under the key: %v, want ErrKeyReuse", err)
	}

	// A record admitted before the upgrade.
	old := codeRequest("771204")
	old.IdempotencyKey = "order-7782-otp"
	sum := sha256.Sum256(old.Canonical())
	rec := notify.NewRecord(old, notify.Admission{NotificationID: "n-old", RequestFingerprint: hex.EncodeToString(sum[:])}, fpT0, notify.DefaultPolicy())
	if _, _, err := store.Admit(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Submit(ctx, old); !errors.Is(err, notify.ErrKeyReuse) {
		t.Errorf("replay of a record holding an unkeyed fingerprint: %v, want ErrKeyReuse (its sunset is past)", err)
	}
	changed := old
	changed.Params = map[string]string{notify.ParamCode: "771205"}
	if _, err := in.Submit(ctx, changed); !errors.Is(err, notify.ErrKeyReuse) {
		t.Errorf("changed request on a pre-upgrade record: %v, want ErrKeyReuse", err)
	}
}

// macOf is the whole HMAC-SHA256 of c under key.
func macOf(key, c []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(c)
	return m.Sum(nil)
}

// TestOwnerFingerprint: an owner fingerprint is 22 characters (16 bytes), the same for a
// principal under one key, different under another key and for another principal, never the
// principal's text, and apart from the request fingerprints made with the same key.
func TestOwnerFingerprint(t *testing.T) {
	const role = "arn:aws:iam::123456789012:role/shop-backend"
	a, err := seal.NewRequestFingerprinter(fpKeyA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := seal.NewRequestFingerprinter(fpKeyB)
	if err != nil {
		t.Fatal(err)
	}
	fp := a.OwnerFP(role)
	if len(fp) != 22 || strings.Contains(fp, "shop") || fp != a.OwnerFP(role) {
		t.Errorf("owner fingerprint %q: want 22 characters, stable, without the ARN", fp)
	}
	if fp == b.OwnerFP(role) || fp == a.OwnerFP("arn:aws:iam::123456789012:role/other-shop") {
		t.Error("the owner fingerprint does not depend on the key and the principal")
	}
	m := hmac.New(sha256.New, fpKeyA)
	m.Write([]byte(role))
	if fp == base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:seal.OwnerFPSize]) {
		t.Error("the owner fingerprint is the HMAC of the bare principal, as a request fingerprint would be: no domain separation")
	}
}
