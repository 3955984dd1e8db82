// Package workerfaults holds the in-process end-to-end tests of dispatch and reconciliation,
// and the faults they survive: intake (the HTTP handler or the service), the dispatch,
// reconcile and sweeper handlers built by the same wiring as the Lambda functions, DynamoDB
// Local, moto SQS and the SMS simulator, all in one process (stacktest.Stack). It has no code of
// its own; the tests live in its _test files and skip under a plain `go test` (run them with
// `go run ./infra/devstack exec -- go test ./infra/workerfaults/...`). The black-box tests of a
// running stack are infra/e2e/'s.
//
// What is covered where, for docs/design.md's provider-outcome table:
//
//	accepted                                  TestProviderOutcomesEndToEnd
//	failure before the request was written    TestNotWrittenEndToEnd (closed port)
//	429 / 503 not processed                   TestProviderOutcomesEndToEnd (path);
//	                                          TestRetryAfterIsHonoured (the wait)
//	4xx permanent                             TestProviderOutcomesEndToEnd
//	timeout after written, drop, 500          TestProviderOutcomesEndToEnd
//	reset, 502, 504, unreadable body          TestAmbiguousAnswersAreReconciled
//	lease expired, no outcome                 TestProviderOutcomesEndToEnd (lease written by
//	                                          hand); TestWorkerKilledMidCall (a worker really
//	                                          cut off during the call)
//
// The fault matrix (TestFaultMatrix), the crash (TestWorkerKilledMidCall), a slow provider at
// the deadline (TestSlowProviderNeverAcceptsAfterTheDeadline), lost retry and reconcile
// messages (TestSweeperRecoversLostRetryAndReconcileMessages) and a lost dispatch message
// (TestSweeperFinishesARecordWhoseMessageWasLost) are here too. The expiry boundary with a fake
// clock is tested by package workercore's TestNoProviderCallAtOrAfterTheDeadline,
// TestLeaseTakenJustBeforeTheDeadline and TestCallEndsMinValidityBeforeTheDeadline.
package workerfaults
