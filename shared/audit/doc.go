// Package audit turns the notifications table's stream into redacted, hash-chained evidence
// (promise 4 of docs/design.md): the audit function's handler and writer, the formats of
// entries and digests, and the reads of the audit table. The digest function's handler is
// package digest, audit-replay's package auditreplay; what auditors run over the trail
// (verifying chains, bundles and proofs) is package auditor, which no Lambda links.
//
// # Entries
//
// Each stream record of the notifications table (NEW_AND_OLD_IMAGES) becomes at most one audit
// Entry, built by Build from an allow-list of attributes; an image is never copied. An INSERT
// is the transition ∅ → state; a MODIFY is recorded only when the record's version changed
// (old state → new state); a REMOVE becomes a "purged" entry whose reason is PURGED_TTL when
// the stream names the DynamoDB service (userIdentity type "Service", principal
// "dynamodb.amazonaws.com") and PURGED_MANUAL otherwise, with the principal in purged_by when
// the stream names one (DynamoDB Streams names only the TTL service, so a manual delete
// usually has none).
//
// actor is the function invocation that made the transition (function, version, request ID),
// copied from the record's actor, which every transition writes in its own conditional
// write; written_by is the audit function invocation that wrote the entry. A purged entry
// has no actor: purged_by names who removed the record, when known.
//
// The entry's time, at, is the new image's updated_at, so it is the time of the transition,
// not of its auditing. A purge has no image after it; its at is the stream record's
// approximate creation time (whole seconds), or the writer's clock if the record has none.
//
// # Keys
//
// Entries are stored under event_id (partition) and seq (sort):
//
//	seq = <idempotency_key> "#" <version, 10 digits zero-padded> [ "#" <notification_id> ] [ "#purged" | "#gap" ]
//
// The version is the record's version after the transition. A purge keeps the version the
// record had when it was removed (no write of the record produced it) and adds the "#purged"
// suffix, which sorts right after the last version's seq. An idempotency key never contains
// "#", so the key is everything before the first "#". The "#<notification_id>" part appears
// only when a key is admitted again after its earlier record was purged and the plain seq
// already holds an entry of the earlier notification; the writer then stores the new
// notification's entry under the longer seq rather than dropping it. day is the UTC date of
// at (YYYY-MM-DD). retain_until is at plus the retention period (AUDIT_RETENTION_DAYS, default
// 400 days) in epoch seconds: the audit table's TTL.
//
// # Ledger
//
// The period reads (the entries written in a period: the digest and archive steps, verify,
// evidence; and the time-range reads of exports) do not use an index copy of each entry. The
// audit function writes a stream batch as one writer Batch (Writer.Begin): every entry of it
// is stamped with one written_at, the batch's, and, before the first put, one **ledger item**
// lists the keys of all the entries the batch will write:
//
//	event_id = "#ledger#" <write_day> "#" <n>     n = SHA-256(written_at)[:4] mod WriteShards
//	seq      = <written_at> "#" <16 hex digits, random>
//	written_at, entries (a list of "<len(event_id)>:<event_id><seq>"), drop_after
//
// A key the batch did not plan (a disambiguated seq) gets a ledger item of its own before its
// put, so no entry is ever stored before a ledger lists it. A read of [start, end) queries
// the ledger partitions of each write day (WriteShards key values a day, the ledgers of one
// instant in one of them, by the stamp) between the two stamps, and reads the listed entries
// with BatchGetItem, keeping each one whose stored written_at is the ledger's: a key listed by
// a batch that died before its put, or whose put found the entry already stored by an earlier
// attempt (under that attempt's stamp, listed in that attempt's ledger), is skipped there. So
// each stored entry is read once, in the period of its written_at, as with an index; an entry
// deleted afterwards is missing from the read and verify reports it against the signed digest.
//
// Cost: one ledger item of about 100 bytes an entry per batch (a stream batch of 100 records:
// 11 write units, 0.11 an entry; the by_write_shard index took one an entry, and kept a copy of
// every attribute for the hot window), against reads: BatchGetItem takes 0.5 read units an
// entry (eventually consistent, an item under 4 KB) where the index's query took the bytes.
// A batch of one record (a quiet stack) costs one write unit of ledger for its one entry, as
// the index did. A ledger's drop_after is its entries' (written_at plus the hot window), and
// the archive step pushes it out with theirs while their period is not archived.
//
// What it does not change: an entry is still written once, with attribute_not_exists, under
// its (event_id, seq) key, chained as below; Timeline reads an event's entries by the table's
// key. What it weakens, and where: an entry put by someone who bypasses the audit writer (the
// table's policy lets only the audit roles put) without a ledger is in no period read — as an
// entry without write_shard was in no index — but it is in its event's Timeline, and verify of
// its chain reports it as covered by no digest.
//
// The by_write_shard index (write_shard = "<write_day>#<n>", sort key written_at, every
// attribute projected) stays for the entries written before the ledgers, which carry
// write_shard: reads take those from it too (no entry is in both). New entries carry no
// write_shard and cost the index nothing; once the hot window has taken the old entries the
// index is empty.
//
// Both kinds of time-range read go through the ledgers (and the index). The entries written in
// [start, end) (WrittenIn: the digests, verify) are those of the ledgers stamped in it. The
// entries whose at is in [from, to) (Reader.Range: export, margin) are read from the
// write days an entry of the range can have been written in — from ClockSkew (a minute) before
// from to MaxLateness (25 hours) after to, since the audit function gives up on stream
// records a day old and the replay reads only what the stream holds (a day); a gap entry's at
// is when it is written — and filtered on at. This costs a range read the entries written in
// the 25 hours after it (read units, each a fraction of a write unit's price), on reads that
// auditors make, not on the write path. An entry written more than MaxLateness after its at
// is still covered by the digest of its written_at and found by Timeline, but Range misses it.
//
// # Hash chain
//
// The entries of one notification (one notification_id) form a chain in version order, a
// purge last. For each entry
//
//	hash = hex(SHA-256(raw(prev_hash) || canonical(entry)))
//
// where raw(prev_hash) is the 32 bytes that the 64 lowercase hex digits of prev_hash encode;
// prev_hash is the previous entry's hash, or the genesis value of 64 zeros for version 1. The
// canonical encoding is the ASCII line "resetnotify-audit-v1\n" followed by one line per field,
// in this fixed order, for every field whether or not it is stored:
//
//	<name> ":" <length of value in bytes, decimal> ":" <value> "\n"
//
//	event_id seq notification_id version at day from_state to_state reason attempt provider
//	provider_message_id destination_fp policy_version safety_margin_ms actor written_by
//	purged_by prev_missing retain_until written_at write_day replayed reconstructed gap_from
//
// Values are the stored ones as text: strings as stored (UTF-8, "" when absent), numbers in
// base 10 without leading zeros or sign ("0" when absent), at and written_at in RFC 3339 UTC
// with exactly nine fraction digits (2006-01-02T15:04:05.000000000Z, "" when absent), the
// booleans prev_missing, replayed and reconstructed "true" or "false" (false when absent).
// prev_hash and hash themselves are not part of the canonical encoding. An auditor can
// recompute a chain from an export with nothing but SHA-256; in Python:
//
//	canon = b"resetnotify-audit-v1\n" + b"".join(
//	    f"{n}:{len(v.encode())}:".encode() + v.encode() + b"\n" for n, v in fields)
//	hash = hashlib.sha256(bytes.fromhex(prev_hash) + canon).hexdigest()
//
// The writer reads the previous entry (the seq of version−1, or of the same version for a
// purge) with a consistent read to learn prev_hash. Stream records of one key arrive in order,
// and the handler stops at the first failure, so the previous entry is normally there. If it
// is not (auditing started after the record, or a record was discarded to the on-failure
// queue after its retries), the writer does not block: it chains from the genesis value and
// stores prev_missing = true, and auditor.Verify reports the gap.
//
// Every entry is written with attribute_not_exists(seq). A condition failure on an entry of
// the same notification means a retried batch already wrote it, and counts as success, so
// replaying a batch writes nothing new.
//
// The chain is keyless: it proves that nothing was edited, deleted or reordered in the middle
// of a chain without rewriting the rest of it. The signed digests make a wholesale rewrite, and
// the deletion of a whole chain, detectable.
//
// # Digests
//
// The writer stamps written_at (and write_day) from its own clock at the start of each batch,
// within the invocation that puts the entries; the ledgers list the entries written in a period. The digest step (digest.Digester) closes
// each period [start, end) — periods start at multiples of their length, in UTC — once it
// ended a grace ago, with one Digest item under event_id DigestEventID ("#digest") and seq =
// start, written with attribute_not_exists(seq). An entry belongs to the period of its
// written_at however late after its at it was written; each closed period has exactly one
// digest, so each entry is covered exactly once. Each digest names the previous digest's period
// start and signature, and is signed (ECDSA P-256 over SHA-256 of CanonicalDigest, DER,
// base64) by a KMS key in AWS or a local key.
//
// A digest has a version (digest_version; absent means 1). The digest step writes version 2;
// verify reads both.
//
// Version 2 (DigestVersionTree) commits to the period's entries through a Merkle tree, hashed as
// RFC 6962 (and RFC 9162) hashes a log: leaf hash = SHA-256(0x00 || leaf data), node hash =
// SHA-256(0x01 || left || right), the empty tree's root SHA-256(""); built with
// github.com/transparency-dev/merkle. There is one leaf per entry written in the period, in
// canonical order: sorted by event_id then seq, bytewise (as ManifestLine.Key), so the tree
// depends on the entries alone, whatever order the index returns them in. An entry's leaf data
// (LeafData) is
//
//	"resetnotify-audit-leaf-v2\n" <len>:<event_id> " " <len>:<seq> " " <len>:<notification_id> " " <hash> "\n"
//
// with lengths in bytes and hash the entry's chain hash, which covers its whole content. The
// item holds digest_version (2), period_start, period_end, count (the tree size), tree_root
// (hex), prev_period_start, prev_signature, key_id, algorithm, signed_at, retain_until and
// signature: a few hundred bytes whatever the period holds. CanonicalDigest of version 2 is the
// header "resetnotify-audit-digest-v2\n" and the lines of digest_version period_start
// period_end count tree_root prev_period_start prev_signature key_id algorithm signed_at
// retain_until. To build it the step reads the period's entries once from the index and keeps
// about 100 bytes per entry (key and leaf hash) to sort them; the tree itself is folded leaf by
// leaf in a compact range (one hash per level). cmd/bench measures time and peak heap per
// 100,000 entries.
//
// Version 1 (DigestVersionManifest) digests, written before version 2, name every entry in a
// gzip-compressed manifest (one line per entry, sorted by event ID then seq:
// "<len>:<event_id> <len>:<seq> <len>:<notification_id> <hash>\n"), with entries_hash =
// hex(SHA-256(manifest)) and count signed; the item limit (400 KB) caps them at about 5,000
// entries a period. Their CanonicalDigest is the header "resetnotify-audit-digest-v1\n" and
// period_start period_end count entries_hash prev_period_start prev_signature key_id algorithm
// signed_at retain_until. They stay verifiable: auditor.Check and auditor.CheckProof read both versions.
//
// auditor.Check verifies a Bundle (the digests overlapping a range and every chain they or the range
// touch): signatures, the chain of digests, that every closed period has a digest, each
// digest against the entries written in its period, and the hash chains. Against a version 2
// digest it rebuilds the period's tree from the bundle and compares size and root: fewer
// entries is a deletion (a whole chain deleted shows only there), more an addition, the same
// count with another root a change; the hash chains then name the entry edited, removed or
// reordered when they can. A period whose grace has passed but whose digest is not written yet
// is late (Report.Late, a warning) until its end plus the grace, the digest schedule
// (config.DigestSchedule) and the lag bound (CheckOptions.LagBound, AUDIT_DIGEST_LAG_BOUND_SECONDS)
// have passed, and missing after; an export file (CheckOptions.Strict) gets no such allowance.
// The digest step emits DigestLag, how long the oldest period not yet closed has been closable.
//
// # Inclusion proofs
//
// auditor.BuildProof ties each entry of one event to the signed digest of its period: for a version 2
// digest, its leaf index and RFC 6962 audit path (leaf to root) in the period's tree, which it
// rebuilds by reading the whole period's entries from the index (one pass per period the event
// touches: the period's index pages, about 100 bytes of memory per entry). Nothing extra is
// stored per period; the cost falls on the rare evidence request rather than on every digest.
// A version 1 digest proves an entry by listing it. CheckProof needs only the proof and the
// public key: the digests' signatures, each entry's content against its hash, its written_at
// against the cited period, the path to the signed root, and the event's hash chains. A proof
// shows that the entries are in the signed trail; that an event has no other entries is what
// verify of a range shows. The proof file (ProofJSON) is one JSON object: type
// "resetnotify-audit-proof-v1", event_id, digests (as in a bundle file), and per entry the entry,
// its leaf data, period_start, leaf_index, tree_size and path (hex), or why it is unproven.
//
// # Replay and gaps
//
// auditreplay.Replayer re-reads a stream batch that the audit function gave up on (its FailureRecord)
// and writes the missing entries, marked replayed. It trusts nothing the record says: the
// stream must be the notifications table's, the shard one the stream lists (DescribeStream),
// the sequence range inside it; anything else is ErrNotOurBatch, an error that leaves the
// message to the queue's redrive, never "records gone". When the stream no longer holds the
// records it writes a gap entry (to_state "gap", reconstructed, seq "<key>#<version>#gap",
// standing for versions gap_from to version) per notification whose chain lacks versions,
// from the notification's current record. It finds those notifications by a keys-only Scan
// of the records changed since the batch arrived, never earlier than MaxBatchAge ago. auditor.Verify
// accepts a prev_missing link to a predecessor written later by a replay or as a gap entry,
// and KnownGaps lists gap entries.
package audit
