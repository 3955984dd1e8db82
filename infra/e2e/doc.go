// Package e2e is the black-box suite of resetnotify: it runs against any deployed stack given
// its endpoints, and talks only HTTP (SigV4-signed, as the HTTP API's IAM routes require), the
// AWS APIs (through auditctl) and the SMS simulator's control API. It imports nothing of the
// project's code but the simulator's wire types.
//
// `make e2e` runs it against `make local` (infra/local/local-e2e.sh), `make emulator-e2e` against
// template.yaml deployed to a LocalStack-compatible emulator (infra/emulator/emulator.sh). The
// environment names the stack:
//
//	RESETNOTIFY_E2E_API       base URL of the notifications API
//	RESETNOTIFY_E2E_SIM       base URL of the SMS simulator the stack sends through (its
//	                          control address: the stack sends to its send port, which the
//	                          suite closes to have every connection refused)
//	RESETNOTIFY_E2E_SIM2      the second simulated provider of the chain, when there is one
//	RESETNOTIFY_E2E_SINCH_WEBHOOK, RESETNOTIFY_E2E_SINCH_TOKEN_FILE
//	                          the Sinch webhook route and a file holding its token, when the
//	                          suite may stand in for Sinch (make e2e)
//	RESETNOTIFY_E2E_TWILIO_SIM, RESETNOTIFY_E2E_TWILIO_WEBHOOK, RESETNOTIFY_E2E_TWILIO_TOKEN_FILE
//	                          the simulator in its Twilio mode (the chain's third provider),
//	                          the Twilio status callback route (the URL dispatch gives
//	                          Twilio, which its signature covers) and a file holding the auth
//	                          token its callbacks are signed with (make e2e and make
//	                          emulator-e2e; under RESETNOTIFY_E2E=required the Twilio tests
//	                          fail without them)
//	RESETNOTIFY_E2E_EXAMPLES  set: run the documented examples too (examples_test.go), which
//	                          need make local's stack (no signature checked, a fresh stack)
//	AUDIT_TABLE               the audit table, read by auditctl
//	AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL_DYNAMODB ...
//	                          the AWS SDK's usual variables, for signing and for auditctl
//
// Without RESETNOTIFY_E2E_API the tests skip, saying so; with RESETNOTIFY_E2E=required (the
// make targets set it) they fail instead.
package e2e
