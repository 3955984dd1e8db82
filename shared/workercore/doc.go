// Package workercore holds what the three background workers of resetnotify share; each
// worker's handler is in the package named after its function:
//
//   - dispatch.Dispatcher consumes the dispatch queue. For each message it loads the record, takes the
//     lease with one conditional write (expected version and now < dispatch_deadline), calls
//     the SMS provider once with the attempt's client reference and a validity period no
//     longer than the time left, and records the classified outcome (docs/design.md "Provider
//     outcomes"): sent, retry_scheduled (jittered exponential backoff, honouring
//     Retry-After), failed, or dispatch_unknown (handed to reconciliation after the
//     provider's visibility window).
//   - reconcile.Reconciler consumes the reconcile queue. It is given an sms.LookupOnly, a type with no
//     Send method, so it can read the provider's view of an attempt but never send; it settles
//     dispatch_unknown records as sent, retry_scheduled (only when the provider proves nothing
//     was accepted), expired, or another inconclusive round with backoff and a bounded count.
//   - sweeper.Sweeper runs on a schedule. It queries every shard of the sparse due index for overdue
//     records and re-enqueues, expires or reclaims them (a lease that ran out becomes
//     dispatch_unknown / LEASE_EXPIRED), so a lost queue message never leaves a record stuck.
//
// The workers share one Base (queue, clock, settings, observability, jitter) and the Core it
// gives each call (load, transition, schedule, handle a batch), the Settings, the provider
// chain (Route, Choose, Health) and the metric names. Queues carry
// only notify.Message {idempotency_key, notification_id, version}. The workers send through
// the notify.Queue port with a delay (sqsqueue implements it over SQS); SQS caps
// DelaySeconds at 15 minutes (notify.MaxQueueDelay), and a longer wait is left to the sweeper
// through next_action_at, which every non-terminal record carries.
//
// Every decision reads the record first and acts through notify.Record.Apply and one
// conditional Store.Transition, so duplicate, stale or reordered messages are harmless: the
// version condition lets exactly one writer win, and the loser only acknowledges. A message's
// version matters in one place: a message for a record that is not due yet is re-scheduled
// only when it carries the record's current version, so stale duplicates do not multiply.
//
// Secrets: the destination number, the params and the rendered body exist only in memory
// between unsealing and the provider call. They are never logged, put in an error, a metric or
// a queue message.
//
// The unit tests of the three workers are one suite here (package workercore_test), over one
// fixture, since a record passes from one worker to the next; the in-process tests against
// the local emulators are infra/workerfaults'. infra/pump drives a handler from an SQS queue
// in-process, for tests and for the local stack.
package workercore
