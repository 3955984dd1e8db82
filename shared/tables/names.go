// Package tables is the one place that names the DynamoDB tables' attributes and indexes, and
// formats their values. The store, the audit writer, the sweeper, the auditor, the tests and
// the local run all use it; the tables' definitions, which a test checks against template.yaml,
// are infra/tablesetup's.
package tables

// Attributes of the notifications table. The key is IdempotencyKey.
const (
	AttrIdempotencyKey     = "idempotency_key"
	AttrNotificationID     = "notification_id"
	AttrEventID            = "event_id"
	AttrChannel            = "channel"
	AttrPurpose            = "purpose"
	AttrState              = "state"
	AttrReason             = "reason"
	AttrVersion            = "version"
	AttrAttempt            = "attempt"
	AttrCreatedAt          = "created_at"
	AttrUpdatedAt          = "updated_at"
	AttrExpiresAt          = "expires_at"
	AttrDispatchDeadline   = "dispatch_deadline"
	AttrPolicyVersion      = "policy_version"
	AttrSafetyMarginMS     = "safety_margin_ms"
	AttrRequestFingerprint = "request_fingerprint"
	AttrSealed             = "sealed"
	AttrDestinationFP      = "destination_fp"
	AttrProvider           = "provider"
	AttrProviderMessageID  = "provider_message_id"
	// AttrAttemptProviders lists the provider of each attempt, in order.
	AttrAttemptProviders = "attempt_providers"
	AttrLeaseUntil       = "lease_until"
	AttrAttemptedAt      = "attempted_at"
	AttrReconcileCount   = "reconcile_count"
	AttrNextActionAt     = "next_action_at"
	AttrDueShard         = "due_shard"
	AttrTTL              = "ttl"
	// AttrLeaseToken is the random token of the current lease.
	AttrLeaseToken = "lease_token"
	// AttrWriteToken is random per conditional write of the store: a write that fails its
	// condition because the SDK retried it after it had committed finds its own token in the
	// item the failure returns.
	AttrWriteToken = "write_token"
	// AttrActor names who made the last transition: "<function>:<version>/<request ID>".
	AttrActor = "actor"
	// AttrEarlyReceipt is a final receipt ("delivered", "undelivered") held for the current
	// attempt, recorded while the record was dispatching.
	AttrEarlyReceipt = "early_receipt"
	// AttrRequeuedAt is when the current version's queue message was last sent again.
	AttrRequeuedAt = "requeued_at"
	// AttrAttemptedNotificationID is the notification ID again, written from the first lease
	// on: the key of the sparse by_notification index, so that admission writes no entry there
	// (no receipt can name a notification that was never attempted).
	AttrAttemptedNotificationID = "attempted_notification_id"
	// AttrPrefixFP and AttrCountry say where the number is, for the conversion counters: the
	// keyed fingerprint of its prefix (never its digits) and its country. Set at admission.
	AttrPrefixFP = "prefix_fp"
	AttrCountry  = "country"
	// AttrNotFoundAt is when a lookup first found nothing of the current attempt at a
	// provider whose "not found" needs a second lookup a visibility window later.
	AttrNotFoundAt = "not_found_at"
	// AttrOwner is the keyed fingerprint of the principal that admitted the record (its
	// owner); absent on records admitted before owners were stored.
	AttrOwner = "owner"
	// AttrConvertedAt is when the caller reported the code or link used.
	AttrConvertedAt = "converted_at"
	// AttrDecideBy is, on a record admitted with the abuse guard on, until when a duplicate
	// waits for its creator's decision; AttrDecidedAt is when whoever counted it (the
	// creator, or a request in its place) marked it admitted (a refusal can no longer be
	// written); AttrRetryAt is, on a refused record, when the window that refused it ends.
	AttrDecideBy  = "decide_by"
	AttrDecidedAt = "decided_at"
	AttrRetryAt   = "retry_at"
)

// Indexes of the notifications table.
const (
	// IndexDue is the sparse GSI (due_shard, next_action_at) that holds only records that
	// are not terminal; the sweeper queries every shard of it.
	IndexDue = "due"
)

// IndexByNotification is the notifications table's sparse KEYS_ONLY GSI on
// attempted_notification_id (the notification ID, from the first lease on): a delivery receipt
// names its attempt (<notification_id>-a<N>), and this index turns the notification ID back
// into the idempotency key, whatever the provider.
const IndexByNotification = "by_notification"

// DueShards is how many partitions the due index spreads its items over, so no single
// partition key becomes hot. The sweeper queries shards 0..DueShards-1.
const DueShards = 8

// Attributes of the audit table. The key is AuditEventID + AuditSeq.
const (
	AuditEventID           = "event_id"
	AuditSeq               = "seq"
	AuditAt                = "at"
	AuditFromState         = "from_state"
	AuditToState           = "to_state"
	AuditReason            = "reason"
	AuditAttempt           = "attempt"
	AuditVersion           = "version"
	AuditNotificationID    = "notification_id"
	AuditProvider          = "provider"
	AuditProviderMessageID = "provider_message_id"
	AuditDestinationFP     = "destination_fp"
	AuditPolicyVersion     = "policy_version"
	AuditSafetyMarginMS    = "safety_margin_ms"
	AuditActor             = "actor"
	// AuditWrittenBy is the audit function invocation that wrote the entry; actor is the one
	// that made the transition, copied from the record.
	AuditWrittenBy   = "written_by"
	AuditPrevHash    = "prev_hash"
	AuditHash        = "hash"
	AuditRetainUntil = "retain_until"
	AuditDay         = "day"
	// AuditPurgedBy names the principal that removed a notification (purged entries only).
	AuditPurgedBy = "purged_by"
	// AuditPrevMissing is true on an entry whose previous entry was absent when it was
	// written, so it was chained from the genesis hash.
	AuditPrevMissing = "prev_missing"
	// AuditWrittenAt is when the audit writer stored the entry (its own clock), and
	// AuditWriteDay the UTC date of it. AuditWriteShard is "<write_day>#<n>", n the entry's
	// shard: with written_at, the key of the by_write_shard index, which held every entry
	// before the ledgers (LedgerEventIDPrefix) and now holds only those written before them:
	// the writer no longer sets it. write_shard is an index attribute only, derived from the
	// entry's keys and write_day: it is not one of the entry's fields and not part of its hash.
	AuditWrittenAt  = "written_at"
	AuditWriteDay   = "write_day"
	AuditWriteShard = "write_shard"
	// AuditReplayed is true on an entry written by the replay of a stream batch that the
	// audit function had given up on.
	AuditReplayed = "replayed"
	// AuditReconstructed is true on a gap entry: built from the notification's current
	// record because the stream no longer held the lost transitions.
	AuditReconstructed = "reconstructed"
	// AuditGapFrom is the first version a gap entry stands for (its version is the last).
	AuditGapFrom = "gap_from"
	// AuditDropAfter is the audit table's TTL attribute (epoch seconds): when DynamoDB may
	// remove the item. On an entry, the end of its hot window (written_at + AUDIT_HOT_DAYS),
	// pushed out by the archive step while its period is not archived; on a digest or an
	// archive item, its retain_until. Like write_shard it is a table attribute only, not one
	// of the entry's fields: not hashed, not exported.
	AuditDropAfter = "drop_after"
)

// IndexByWriteShard is the audit table's only GSI (write_shard, written_at): the entries
// written before the ledgers (LedgerEventIDPrefix), which carry write_shard, shard by shard,
// for the digest step, verify and time-range exports, beside the ledgers (docs/audit.md).
// It projects every attribute. The audit writer no longer sets write_shard, so new
// entries cost it nothing; it empties as the hot window takes the old entries.
const IndexByWriteShard = "by_write_shard"

// DigestEventID is the audit table partition that holds the signed digests, one item per
// period with the period's start (FormatTime) as its seq. No event ID can take this value:
// event IDs never contain "#".
const DigestEventID = "#digest"

// LedgerEventIDPrefix starts the audit table partitions of the ledger items:
// "#ledger#<write_day>#<n>", each item listing the keys of the entries one writer batch
// stored, stamped with one written_at (docs/audit.md). The period reads (the digest
// step, the archive step, verify, exports) query them instead of an index.
const LedgerEventIDPrefix = "#ledger#"

// LedgerEntries is a ledger item's list of entry keys, each "<len(event_id)>:<event_id><seq>".
const LedgerEntries = "entries"

// ArchiveEventID is the audit table partition that records the archived periods, one item
// per period with the period's start (FormatTime) as its seq, written by the archive step
// once the period's objects and signed manifest are stored in the archive bucket.
const ArchiveEventID = "#archive"

// Attributes of an archive item (besides event_id, seq, period_start, period_end, count,
// retain_until and drop_after).
const (
	ArchiveManifestKey    = "manifest_key"
	ArchiveManifestSHA256 = "manifest_sha256"
	ArchiveObjects        = "objects"
	ArchiveBucket         = "bucket"
	ArchivedAt            = "archived_at"
	// ArchiveVersions maps each object key of the period (parts and manifest) to the S3
	// version ID its put returned: readers get that version, never whatever is latest.
	ArchiveVersions = "object_versions"
)

// Attributes of a digest item (besides event_id, seq and retain_until).
const (
	DigestPeriodStart     = "period_start"
	DigestPeriodEnd       = "period_end"
	DigestCount           = "count"
	DigestEntriesHash     = "entries_hash"
	DigestManifest        = "manifest"
	DigestManifestHash    = "manifest_hash"
	DigestPrevPeriodStart = "prev_period_start"
	DigestPrevSignature   = "prev_signature"
	DigestKeyID           = "key_id"
	DigestAlgorithm       = "algorithm"
	DigestSignedAt        = "signed_at"
	DigestSignature       = "signature"
	// DigestVersion is the digest's format: absent on the first format's items (manifest
	// digests, version 1), 2 on Merkle-tree digests.
	DigestVersion = "digest_version"
	// DigestTreeRoot is a version 2 digest's Merkle tree root over its period's entries.
	DigestTreeRoot = "tree_root"
)

// Attributes of the receipts table: one item per attempt, holding the most informative
// delivery event a provider reported for it. The key is ReceiptAttemptRef. A receipt never
// holds a phone number or a message body.
const (
	ReceiptAttemptRef     = "attempt_ref"
	ReceiptMessageID      = "message_id"
	ReceiptStatus         = "status"
	ReceiptAt             = "at"
	ReceiptNotificationID = "notification_id"
	ReceiptProvider       = "provider"
	// ReceiptDetail is the provider's own code for the event (e.g. TEXT_BLOCKED or
	// validity_expired), kept as evidence.
	ReceiptDetail = "detail"
	// ReceiptRecordedAt is when provider-events stored the receipt.
	ReceiptRecordedAt = "recorded_at"
	ReceiptTTL        = "ttl"
)

// Attributes of the guard table: small counter items of the abuse guard, each removed by TTL
// once its window is over. The key is GuardKey: "d#<destination_fp>#<yyyymmdd>" for a
// destination's day (GuardDayCount, and GuardHourPrefix+"<hh>" per UTC hour) or
// "p#<prefix fingerprint>#<yyyymmddhhmm>" for a prefix's minute (GuardDestinations, the string
// set of the destination fingerprints admitted in it). No item holds a number or a prefix's
// digits.
const (
	GuardKey          = "counter_key"
	GuardDayCount     = "day_count"
	GuardHourPrefix   = "h"
	GuardDestinations = "fps"
	// GuardCounted is, on a destination's day, the string set of the notification IDs its
	// counts hold, so that counting one notification again counts nothing more.
	GuardCounted = "ids"
	GuardTTL     = "ttl"
)

// Names are the physical names of the tables. In AWS they come from the template (the
// NOTIFICATIONS_TABLE, AUDIT_TABLE and RECEIPTS_TABLE variables); tests make unique ones.
type Names struct {
	Notifications string
	Audit         string
	// Receipts is optional: when empty, tablesetup.Create makes no receipts table.
	Receipts string
	// Guard is optional: when empty, tablesetup.Create makes no guard table.
	Guard string
	// Conversions is optional: when empty, tablesetup.Create makes no conversion table.
	Conversions string
	// SealKeys is optional: when empty, tablesetup.Create makes no seal-keys table.
	SealKeys string
}

// Attributes of the seal-keys table: one item per data key the intake seals with (one per
// intake instance and hour at most), holding its KMS-encrypted form, never a plaintext key.
// The key is SealKeyID, the hex of the 16-byte ID every envelope sealed with it names (see
// shared/seal). Written once by intake (attribute_not_exists), read by dispatch on a cache
// miss; SealKeyTTL (epoch seconds) outlasts every record the key may have sealed.
const (
	SealKeyID        = "key_id"
	SealKeyEncrypted = "encrypted_key"
	SealKeyCreatedAt = "created_at"
	SealKeyTTL       = "ttl"
)
