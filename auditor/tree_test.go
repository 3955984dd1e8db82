package auditor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// rfc6962Root is RFC 6962's Merkle Tree Hash written out from its definition (section 2.1),
// to hold PeriodTree to the standard rather than to the library that builds it.
func rfc6962Root(leaves [][]byte) []byte {
	switch n := len(leaves); n {
	case 0:
		s := sha256.Sum256(nil)
		return s[:]
	case 1:
		s := sha256.Sum256(append([]byte{0}, leaves[0]...))
		return s[:]
	default:
		k := 1
		for k*2 < n {
			k *= 2
		}
		h := sha256.New()
		h.Write([]byte{1})
		h.Write(rfc6962Root(leaves[:k]))
		h.Write(rfc6962Root(leaves[k:]))
		return h.Sum(nil)
	}
}

func testLines(n int) []auditlog.ManifestLine {
	out := make([]auditlog.ManifestLine, n)
	for i := range out {
		out[i] = auditlog.ManifestLine{EventID: fmt.Sprintf("evt-%03d", i/3), Seq: auditlog.Seq(fmt.Sprintf("k%d", i/3), int64(i%3+1)),
			NotificationID: fmt.Sprintf("n%d", i/3), Hash: fmt.Sprintf("%064x", i)}
	}
	return out
}

// TestPeriodTree holds the tree to RFC 6962 over the leaves in canonical order, whatever the
// order the entries come in, and checks every leaf's audit path for sizes around powers of
// two; a path for another leaf, a changed entry or a changed path node is refused.
func TestPeriodTree(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31} {
		lines := testLines(n)
		var leafData [][]byte
		for _, l := range lines { // testLines are in canonical order already
			leafData = append(leafData, auditlog.LeafData(l))
		}
		var tree auditlog.PeriodTree
		for _, i := range rand.Perm(n) {
			tree.Add(lines[i])
		}
		if got, want := tree.Root(), hex.EncodeToString(rfc6962Root(leafData)); got != want {
			t.Fatalf("size %d: root %s, RFC 6962 says %s", n, got, want)
		}
		d := auditlog.Digest{Version: auditlog.DigestVersionTree, Count: tree.Size(), Root: tree.Root(),
			PeriodStart: time.Unix(0, 0), PeriodEnd: time.Unix(60, 0)}
		idx := make([]uint64, n)
		for i := range idx {
			idx[i] = uint64(i)
		}
		paths, err := tree.InclusionPaths(idx)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range lines {
			at, ok := tree.Index(l.Key())
			if !ok || at != uint64(i) {
				t.Fatalf("size %d: leaf %d found at %d (%v)", n, i, at, ok)
			}
			if err := VerifyInclusion(d, l, at, paths[at]); err != nil {
				t.Errorf("size %d leaf %d: %v", n, i, err)
			}
			changed := l
			changed.Hash = strings.Repeat("e", 64)
			if VerifyInclusion(d, changed, at, paths[at]) == nil {
				t.Errorf("size %d leaf %d: a changed entry verified", n, i)
			}
			if n > 1 && VerifyInclusion(d, l, (at+1)%uint64(n), paths[at]) == nil {
				t.Errorf("size %d leaf %d: the path verified at another index", n, i)
			}
			if len(paths[at]) > 0 {
				bad := append([][]byte(nil), paths[at]...)
				bad[0] = append([]byte(nil), bad[0]...)
				bad[0][0] ^= 1
				if VerifyInclusion(d, l, at, bad) == nil {
					t.Errorf("size %d leaf %d: a changed path verified", n, i)
				}
			}
		}
	}
}

// TestLeafDataIsUnambiguous: values that would run together without their lengths give
// different leaves.
func TestLeafDataIsUnambiguous(t *testing.T) {
	a := auditlog.ManifestLine{EventID: "e 1", Seq: "k#0000000001", NotificationID: "n", Hash: strings.Repeat("a", 64)}
	b := auditlog.ManifestLine{EventID: "e", Seq: "1 k#0000000001", NotificationID: "n", Hash: strings.Repeat("a", 64)}
	if string(auditlog.LeafData(a)) == string(auditlog.LeafData(b)) {
		t.Errorf("two entries share leaf data %q", auditlog.LeafData(a))
	}
}
