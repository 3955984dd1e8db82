// Package auditlog turns the notifications table's stream into redacted, hash-chained evidence
// (promise 4 of docs/design.md): the audit function's handler and writer, the formats of
// entries, ledgers and digests, and the reads of the audit table. The digest function's
// handler is package digest, audit-replay's package auditreplay; what auditors run over the
// trail (chains, bundles, proofs) is package auditor, which no Lambda links. docs/audit.md
// describes the formats an auditor relies on.
//
// Each stream record becomes at most one Entry, built by Build from an allow-list of
// attributes (an image is never copied): an INSERT is ∅ → state, a MODIFY only when the
// version changed, a REMOVE a purged entry. Entries are keyed by event_id and
//
//	seq = <idempotency_key> "#" <version, 10 digits> [ "#" <notification_id> ] [ "#purged" | "#gap" ]
//
// and chained per notification: hash = hex(SHA-256(raw(prev_hash) || canonical(entry))), the
// canonical encoding being the line "resetnotify-audit-v1\n" and one "<name>:<len>:<value>\n"
// line per field in a fixed order (see Canonical). Every entry is put with
// attribute_not_exists(seq), so a retried batch writes nothing new; a missing predecessor is
// chained from the genesis value with prev_missing set, never waited for.
//
// A stream batch is one writer Batch: its entries share one written_at, and one ledger item
// (event_id "#ledger#<write_day>#<n>", n = SHA-256(written_at)[:4] mod WriteShards) lists
// their keys before the first put, so no entry is stored before a ledger names it. A period
// read queries the ledgers and keeps each entry stored with its ledger's stamp: each entry is
// read once, in the period of its written_at. The by_write_shard index is still read for
// entries written before the ledgers. Time-range reads by at span ClockSkew before to
// MaxLateness after the range.
//
// Digests (event_id "#digest", seq = period start) commit to each closed period's entries by
// an RFC 6962 Merkle tree of LeafData in (event_id, seq) order, chain to the previous digest,
// and are signed (ECDSA P-256 over SHA-256 of CanonicalDigest); version 1 digests (a gzip
// manifest) remain readable.
package auditlog
