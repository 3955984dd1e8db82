package e2e_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDigestsAndProof takes one notification to delivered, waits for the digest step to close
// the periods its audit entries were written in (a minute each on the local stack, with a
// 10-second grace), then writes the event's inclusion proof with auditctl evidence --proof and
// checks it offline with auditctl verify --proof, and verifies the signed digests of the span
// with verify --from --to. It needs the digests' public key file ($AUDIT_DIGEST_PUBLIC_KEY,
// which the local stack exports); without it (a stack signing with KMS) it skips.
func TestDigestsAndProof(t *testing.T) {
	s := getStack(t)
	key := os.Getenv("AUDIT_DIGEST_PUBLIC_KEY")
	if key == "" {
		t.Skip("AUDIT_DIGEST_PUBLIC_KEY is not set: no local digest key to verify with")
	}
	from := time.Now().UTC().Add(-time.Minute).Truncate(time.Minute)
	n := s.newNotification(t, "digested", number(t), 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	s.waitState(t, n.key(), settle, "delivered")
	s.audited(t, n.EventID, "(RECEIPT_DELIVERED)")
	proof := filepath.Join(t.TempDir(), "proof.json")
	deadline := time.Now().Add(4 * time.Minute)
	var out string
	var err error
	for time.Now().Before(deadline) {
		if _, err = s.auditctl(t, "evidence", "--event-id", n.EventID, "--proof", proof, "--public-key", key); err == nil {
			if out, err = s.auditctl(t, "verify", "--proof", proof, "--public-key", key); err == nil {
				break
			}
		}
		time.Sleep(5 * time.Second)
	}
	if err != nil || !strings.Contains("\n"+out, "\nOK: ") || !strings.Contains(out, "proven in") {
		t.Fatalf("verify --proof of %s: %v\n%s", n.EventID, err, out)
	}
	// auditctl says on stderr which store it read (the table or the archive) before its verdict.
	to := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	out, err = s.auditctl(t, "verify", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--public-key", key)
	if err != nil || !strings.Contains("\n"+out, "\nOK: ") {
		t.Errorf("verify --from %s --to %s: %v\n%s", from.Format(time.RFC3339), to.Format(time.RFC3339), err, out)
	}
}
