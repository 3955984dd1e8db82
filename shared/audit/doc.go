// Package audit is the audit function's handler: Handler turns a batch of notifications-table
// stream records into audit entries, in order, written through package auditlog, the library
// that holds the entries, their chains and ledgers, and the digests.
package audit
