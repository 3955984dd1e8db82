package auditlog

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"time"
)

// WriteShards is how many partition key values one write day's ledger items are spread over
// ("#ledger#<write_day>#<n>", n from the batch's stamp; see the package
// documentation), and how many write_shard values the by_write_shard index holds a day for the
// entries written before the ledgers ("<write_day>#<n>", n = the first 4 bytes of
// SHA-256(event_id, 0, seq) mod WriteShards). Every reader queries all WriteShards values of
// each day. A partition key value takes 1,000 write units a second (`make bench` prints the
// hottest ledger partition's share). Raising it is safe for readers built with the new value;
// lowering it would hide the entries of the dropped shards.
const WriteShards = 16

// MaxLateness bounds how long after its at an entry is written: the audit function gives up
// on stream records a day old (MaximumRecordAgeInSeconds) and the replay reads only what the
// stream still holds (24 hours), so an entry is written within a day of its transition plus
// a function's timeout. A gap entry's at is when it was written. Range reads the write days up
// to MaxLateness after a range's end for entries written late.
const MaxLateness = 25 * time.Hour

// ClockSkew is how far the audit writer's clock (written_at) may be behind the clock of the
// function that stamped the transition (at): Range starts reading that much before a range.
const ClockSkew = time.Minute

// writeShard returns the by_write_shard partition key of e: its write day and shard.
func writeShard(e Entry) string {
	return e.WriteDay + "#" + strconv.Itoa(shardOf(e.EventID, e.Seq))
}

// shardOf returns the shard of the entry keyed (eventID, seq), in [0, WriteShards). SHA-256,
// not FNV: the keys of one burst differ in a few characters, and FNV-1a's low bits then take
// only some of the values (every shard odd, in a test of 120 keys).
func shardOf(eventID, seq string) int {
	h := sha256.New()
	h.Write([]byte(eventID))
	h.Write([]byte{0})
	h.Write([]byte(seq))
	return int(binary.BigEndian.Uint32(h.Sum(nil)[:4]) % WriteShards)
}

// shardKeys returns the write_shard values of day, one per shard.
func shardKeys(day string) []string {
	out := make([]string, WriteShards)
	for n := range out {
		out[n] = day + "#" + strconv.Itoa(n)
	}
	return out
}
