// Package e2e holds the end-to-end tests of dispatch and reconciliation: intake (the HTTP
// handler or the service), the dispatch, reconcile and sweeper workers built by the same wiring
// as the Lambda functions, DynamoDB Local, moto SQS and the SMS simulator, all in one process
// (workertest.Stack). It has no code of its own; the tests live in its _test files and skip
// under a plain `go test` (run them with `go run ./cmd/devstack exec -- go test ./dev/workere2e/...`).
//
// What is covered where, for docs/design.md's provider-outcome table:
//
//	accepted                                  worker.TestProviderOutcomesEndToEnd
//	failure before the request was written    worker.TestNotWrittenEndToEnd (closed port)
//	429 / 503 not processed                   worker.TestProviderOutcomesEndToEnd (path);
//	                                          TestRetryAfterIsHonoured here (the wait)
//	4xx permanent                             worker.TestProviderOutcomesEndToEnd
//	timeout after written, drop, 500          worker.TestProviderOutcomesEndToEnd
//	reset, 502, 504, unreadable body          TestAmbiguousAnswersAreReconciled here
//	lease expired, no outcome                 worker.TestProviderOutcomesEndToEnd (lease
//	                                          written by hand); TestWorkerKilledMidCall here
//	                                          (a worker really cut off during the call)
//
// The fault matrix (TestFaultMatrix), the crash (TestWorkerKilledMidCall), a slow provider at
// the deadline (TestSlowProviderNeverAcceptsAfterTheDeadline) and lost retry and reconcile
// messages (TestSweeperRecoversLostRetryAndReconcileMessages) are here too. The expiry
// boundary with a fake clock is tested by worker.TestNoProviderCallAtOrAfterTheDeadline,
// worker.TestLeaseTakenJustBeforeTheDeadline and worker.TestCallEndsMinValidityBeforeTheDeadline,
// and a lost dispatch message by worker.TestSweeperFinishesARecordWhoseMessageWasLost.
package workerfaults
