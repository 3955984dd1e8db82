// Package faultproxy is a fault-injecting HTTP reverse proxy for game days: it stands on
// loopback between the Lambda functions of a locally deployed stack and the emulator
// (MiniStack), forwards every AWS request, and, as scripted, throttles it, fails it with a 500,
// delays it, forwards it and drops the answer, resets the connection, delivers an SQS message
// twice or late, or SIGKILLs the function process that sent it. infra/faultproxy/cmd runs it;
// infra/emulator/emulator.sh starts it in front of MiniStack with RESETNOTIFY_FAULT_PROXY=1. No Lambda
// links it.
//
// Each request is named by service (its SigV4 credential scope) and operation (X-Amz-Target,
// the query protocol's Action, S3's method and path), and attributed, when a rule names a
// function, to the process at the client end of its connection (/proc/net/tcp, then the
// /proc/<pid>/fd that holds the socket, then AWS_LAMBDA_FUNCTION_NAME in /proc/<pid>/environ),
// which also makes per-function rules possible. Rules and counts are driven through the control
// API under ControlPrefix on the proxy's own listener, for which Client is the Go client.
//
// What MiniStack 1.5.33 (LAMBDA_EXECUTOR=local) does with a function process killed
// mid-invocation: the provided-runtime worker sees the process gone and fails the invocation
// with "Runtime exited before returning a response" (Runtime.ExitError); the environment is torn
// down and the next invocation starts a new process (a cold start). For an SQS event source
// mapping the whole batch then counts as failed: no message of it is deleted, each comes back
// after the queue's visibility timeout, and the mapping backs off 1 s (partial batch responses
// apply only to an invocation that answered). For a DynamoDB stream mapping the shard position
// does not advance, so the same batch is invoked again after the 1 s backoff, until it succeeds
// or its oldest record is older than MaximumRecordAgeInSeconds (then it goes to the OnFailure
// destination). For an API Gateway route (provider-events' webhook) the caller gets a 502 and
// its own retry policy applies (the simulator tries its webhook three times).
package faultproxy
