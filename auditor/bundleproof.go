package auditor

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// proofFileType names a proof file's format in its "type" field.
const proofFileType = "resetnotify-audit-proof-v1"

// proofJSON is a proof file: one JSON object.
type proofJSON struct {
	Type    string           `json:"type"`
	EventID string           `json:"event_id"`
	Digests []digestJSON     `json:"digests"`
	Entries []entryProofJSON `json:"entries"`
}

// entryProofJSON is one entry's proof. Leaf is the entry's leaf data (LeafData), for the
// reader: verification recomputes it from the entry and requires it to match. Path is hex.
type entryProofJSON struct {
	Entry       json.RawMessage `json:"entry"`
	Leaf        string          `json:"leaf,omitempty"`
	PeriodStart *time.Time      `json:"period_start,omitempty"`
	LeafIndex   uint64          `json:"leaf_index"`
	TreeSize    int64           `json:"tree_size"`
	Path        []string        `json:"path"`
	Unproven    string          `json:"unproven,omitempty"`
}

// ProofJSON returns p as a proof file: one indented JSON object holding the event ID, the
// signed digests (as in a bundle file) and, per entry, the entry (as EntryJSON), its leaf
// data, period, leaf index, tree size and audit path (hex, leaf to root).
func ProofJSON(p Proof) ([]byte, error) {
	out := proofJSON{Type: proofFileType, EventID: p.EventID, Digests: []digestJSON{}, Entries: []entryProofJSON{}}
	for _, d := range p.Digests {
		out.Digests = append(out.Digests, toDigestJSON(d))
	}
	for _, ep := range p.Entries {
		j := entryProofJSON{Entry: auditlog.EntryJSON(ep.Entry), LeafIndex: ep.LeafIndex, TreeSize: ep.TreeSize,
			Path: []string{}, Unproven: ep.Unproven}
		if !ep.PeriodStart.IsZero() {
			t := ep.PeriodStart
			j.PeriodStart, j.Leaf = &t, string(auditlog.LeafData(auditlog.LineOf(ep.Entry)))
		}
		for _, h := range ep.Path {
			j.Path = append(j.Path, hex.EncodeToString(h))
		}
		out.Entries = append(out.Entries, j)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("auditor.proof json %s: %w", p.EventID, err)
	}
	return append(b, '\n'), nil
}

// ReadProof reads a proof file written by ProofJSON. A malformed file is an error naming the
// record; a leaf that is not the entry's leaf data makes the entry unproven.
func ReadProof(raw []byte) (Proof, error) {
	var j proofJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Proof{}, fmt.Errorf("auditor.read proof: %w", err)
	}
	if j.Type != proofFileType {
		return Proof{}, fmt.Errorf("auditor.read proof: not a proof file (type %q, want %q)", j.Type, proofFileType)
	}
	p := Proof{EventID: j.EventID}
	for _, d := range j.Digests {
		p.Digests = append(p.Digests, d.digest())
	}
	for i, ej := range j.Entries {
		ep, err := ej.proof()
		if err != nil {
			return Proof{}, fmt.Errorf("auditor.read proof: entry %d: %w", i+1, err)
		}
		p.Entries = append(p.Entries, ep)
	}
	return p, nil
}

func (j entryProofJSON) proof() (EntryProof, error) {
	e, err := auditlog.EntryFromJSON(j.Entry)
	if err != nil {
		return EntryProof{}, err
	}
	ep := EntryProof{Entry: e, LeafIndex: j.LeafIndex, TreeSize: j.TreeSize, Unproven: j.Unproven}
	if j.PeriodStart != nil {
		ep.PeriodStart = j.PeriodStart.UTC()
	}
	for _, h := range j.Path {
		b, err := hex.DecodeString(h)
		if err != nil {
			return EntryProof{}, fmt.Errorf("path is not hex")
		}
		ep.Path = append(ep.Path, b)
	}
	if j.Leaf != "" && j.Leaf != string(auditlog.LeafData(auditlog.LineOf(e))) && ep.Unproven == "" {
		ep.Unproven = "its leaf data is not that of the entry"
	}
	return ep, nil
}
