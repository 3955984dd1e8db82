// Package compat holds the shapes one release of resetnotify writes and another reads while a
// deploy is under way: the notifications record (as stored, and as the audit function gets it
// from the stream), the dispatch queue message, the provider receipt as the receipts table
// stores it, and the audit entry. Shapes builds each of them with this checkout's own encoders
// from fixed inputs; testdata/<release>/ holds what an earlier release's code wrote from the
// same inputs (make compat-fixtures COMPAT_FROM=<tag or commit> writes them, running this
// package on that release's code, and there has that release's decoders read this checkout's
// shapes: Read, cmd -check). Its tests read every earlier release's shapes with this release's
// decoders, and check that what this release writes keeps every field an earlier release
// reads, with its type. Dev only: no Lambda links it.
package compat
