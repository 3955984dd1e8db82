package auditlog

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// leafHeader starts every leaf's data; it names the leaf encoding's version.
const leafHeader = "resetnotify-audit-leaf-v2\n"

// LeafData returns the data of the Merkle tree leaf that stands for the entry l names: the
// leaf header, then l's manifest line (see encodeManifest). A version 2 digest's tree hashes
// it as RFC 6962 does: SHA-256(0x00 || data).
func LeafData(l ManifestLine) []byte {
	var b bytes.Buffer
	b.WriteString(leafHeader)
	fmt.Fprintf(&b, "%d:%s %d:%s %d:%s %s\n", len(l.EventID), l.EventID, len(l.Seq), l.Seq,
		len(l.NotificationID), l.NotificationID, l.Hash)
	return b.Bytes()
}

// LeafHash returns the RFC 6962 leaf hash of l's LeafData.
func LeafHash(l ManifestLine) []byte { return rfc6962.DefaultHasher.HashLeaf(LeafData(l)) }

// treeLeaf is what a PeriodTree keeps of one entry: its key, for the canonical order, and its
// leaf hash. About 100 bytes an entry.
type treeLeaf struct {
	key  string
	hash [32]byte
}

// PeriodTree is the Merkle tree of one period's entries. Add them in any order: the tree's
// leaves are in canonical order, sorted by event ID then seq (bytewise, as ManifestLine.Key),
// so the tree depends on the entries alone.
type PeriodTree struct {
	leaves []treeLeaf
	sorted bool
}

// Add adds the entry that l names.
func (t *PeriodTree) Add(l ManifestLine) {
	var h [32]byte
	copy(h[:], LeafHash(l))
	t.leaves = append(t.leaves, treeLeaf{key: l.Key(), hash: h})
	t.sorted = false
}

// Size is the number of leaves.
func (t *PeriodTree) Size() int64 { return int64(len(t.leaves)) }

func (t *PeriodTree) sort() {
	if !t.sorted {
		sort.Slice(t.leaves, func(i, j int) bool { return t.leaves[i].key < t.leaves[j].key })
		t.sorted = true
	}
}

var rangeFactory = compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// Root returns the tree's root, hex; an empty tree's is RFC 6962's empty root, SHA-256("").
func (t *PeriodTree) Root() string {
	root, _ := t.walk(nil) // appending to a range from 0 cannot fail
	return hex.EncodeToString(root)
}

// walk builds the tree leaf by leaf in a compact range (memory: one hash per level) and
// reports every node of a perfect subtree, leaves included, to visit.
func (t *PeriodTree) walk(visit compact.VisitFn) ([]byte, error) {
	t.sort()
	if len(t.leaves) == 0 {
		return rfc6962.DefaultHasher.EmptyRoot(), nil
	}
	r := rangeFactory.NewEmptyRange(0)
	for i := range t.leaves {
		if err := r.Append(t.leaves[i].hash[:], visit); err != nil {
			return nil, err
		}
	}
	return r.GetRootHash(nil)
}

// Index returns the leaf index of the entry whose key (ManifestLine.Key) is key.
func (t *PeriodTree) Index(key string) (uint64, bool) {
	t.sort()
	i := sort.Search(len(t.leaves), func(i int) bool { return t.leaves[i].key >= key })
	return uint64(i), i < len(t.leaves) && t.leaves[i].key == key
}

// InclusionPaths returns the RFC 6962 audit path of each leaf index in indices, in one pass
// over the tree.
func (t *PeriodTree) InclusionPaths(indices []uint64) (map[uint64][][]byte, error) {
	size := uint64(len(t.leaves))
	plans := make(map[uint64]proof.Nodes, len(indices))
	want := map[compact.NodeID][]byte{}
	for _, i := range indices {
		n, err := proof.Inclusion(i, size)
		if err != nil {
			return nil, fmt.Errorf("audit.inclusion path %d of %d: %w", i, size, err)
		}
		plans[i] = n
		for _, id := range n.IDs {
			want[id] = nil
		}
	}
	if _, err := t.walk(func(id compact.NodeID, h []byte) {
		if _, ok := want[id]; ok {
			want[id] = append([]byte(nil), h...)
		}
	}); err != nil {
		return nil, fmt.Errorf("audit.inclusion paths: %w", err)
	}
	out := make(map[uint64][][]byte, len(plans))
	for i, n := range plans {
		hashes := make([][]byte, len(n.IDs))
		for k, id := range n.IDs {
			hashes[k] = want[id]
		}
		path, err := n.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
		if err != nil {
			return nil, fmt.Errorf("audit.inclusion path %d of %d: %w", i, size, err)
		}
		out[i] = path
	}
	return out, nil
}
