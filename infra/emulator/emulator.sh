#!/usr/bin/env bash
# emulator.sh deploys template.yaml, as committed, to MiniStack (a LocalStack-compatible
# emulator) with the SAM CLI, and runs a command against the deployed stack:
#
#   infra/emulator/emulator.sh [command ...]      default: the black-box suite and a `sam remote invoke`
#                                        of every events/intake-get-not-found.json (make emulator-e2e)
#
# It starts MiniStack on a free loopback port (its Lambda functions run as host processes),
# runs `sam build` (BuildMethod makefile, GOARCH of this machine and the Architecture to match)
# and `sam deploy` (Target=emulator, SmsProviders=simulator,simulator2,twilio), checks the
# deployed tables, routes and callback URLs against the template (infra/stackcheck, which also
# enables TTL where the emulator ignored it, saying so), starts the SMS simulators (infra/smssim/cmd,
# the third in its Twilio mode), runs the command with the
# stack's endpoints in the environment (RESETNOTIFY_E2E_*, AUDIT_TABLE, AWS_ENDPOINT_URL), and
# stops everything it started, by PID, on any exit. Tools come from .tools/
# (infra/install-tools.sh emulator).
#
# Every emulator stack has metrics: once the stack is deployed, infra/emfbridge/cmd tails the
# emulator's /aws/lambda/* log groups (where MiniStack writes each function's output) and turns
# the EMF lines the functions write into CloudWatch metrics with PutMetricData, as CloudWatch
# Logs does in AWS; so `aws cloudwatch get-metric-data`, the dashboard and infra/alarmeval read
# what the code emitted (docs/operations.md, "Metrics and alarms locally"). Its log is
# emfbridge.log in the work directory. After the suite, the metrics and alarm tests
# (infra/alarmeval's TestEmulator*) run against the stack.
#
# RESETNOTIFY_FAULT_PROXY=1 puts the fault-injecting proxy (infra/faultproxy/cmd) on a free loopback
# port in front of MiniStack, gives MiniStack the proxy as the AWS_ENDPOINT_URL its functions
# get (so every AWS call a function makes goes through it), and exports its URL to the command
# as RESETNOTIFY_FAULT_PROXY_URL (its control API is under /_faultproxy/; docs/operations.md).
# This script, sam and the command keep talking to MiniStack directly. Without the variable
# nothing changes.
#
# RESETNOTIFY_EMULATOR_FROM=<tag or commit> deploys that release's tree instead of this checkout;
# the command gets infra/emulator/deploy.sh to deploy a tree over the stack (the upgrade game
# day deploys this checkout with it) and RESETNOTIFY_EMULATOR_DEPLOYED, the release deployed first.
#
# Runs of this script may overlap (make gameday runs one per lane, infra/gameday/gameday.sh): each has
# its own MiniStack, proxy, simulators, bridge, ports and work directory, and builds into
# $work/sam (not the checkout). What they would still race on, the tools' install and the
# window between picking a free port and binding it (the simulators' ports are picked before
# the deploy, which needs their URLs, and bound after it), is held under a lock on
# .aws-sam/emulator-setup.lock, from the install to the moment the command starts: a second run
# waits for the first one's setup (a few minutes), then sets up its own while the first one's
# command runs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=infra/lib.sh
source infra/lib.sh
# shellcheck source=infra/emulator/deploy.sh
source infra/emulator/deploy.sh
tools="$root/.tools"
setup_lock .aws-sam/emulator-setup.lock
./infra/install-tools.sh emulator

stack=resetnotify-e2e
goarch=$(go env GOARCH)
case "$goarch" in
  amd64) architecture=x86_64 ;;
  arm64) architecture=arm64 ;;
  *) echo "emulator: no Lambda architecture for GOARCH=$goarch" >&2; exit 1 ;;
esac

# RESETNOTIFY_EMULATOR_ENDPOINT names an emulator that is already running (LocalStack,
# infra/localstack/run.sh); without it MiniStack is started here.
endpoint=${RESETNOTIFY_EMULATOR_ENDPOINT:-}
fault_proxy=${RESETNOTIFY_FAULT_PROXY:-}
if [[ -n "$fault_proxy" && "$fault_proxy" != 0 && -n "$endpoint" ]]; then
  echo "emulator: RESETNOTIFY_FAULT_PROXY needs the MiniStack this script starts (unset RESETNOTIFY_EMULATOR_ENDPOINT)" >&2
  exit 1
fi
if [[ -z "$endpoint" ]]; then
  port=$(free_port)
  endpoint="http://127.0.0.1:$port"
  # The endpoint MiniStack gives its functions: itself, or the fault proxy in front of it.
  functions_endpoint=$endpoint
  if [[ -n "$fault_proxy" && "$fault_proxy" != 0 ]]; then
    go build -o "$work/faultproxy" ./infra/faultproxy/cmd
    fault_proxy_url="http://127.0.0.1:$(free_port)"
    functions_endpoint=$fault_proxy_url
    echo "emulator: fault proxy on $fault_proxy_url in front of MiniStack"
    start_bg "$work/faultproxy.log" "$work/faultproxy" -addr "${fault_proxy_url#http://}" -upstream "$endpoint"
    fault_proxy_pid=$!
  fi
  # MiniStack's defaults bind every interface, open an IoT MQTT listener on 8883 and keep scratch
  # files in /tmp: keep it on loopback, one port, in memory, with its files in $work.
  # LAMBDA_EXECUTOR=local runs provided.al2023 bootstraps as host processes (no Docker);
  # AWS_ENDPOINT_URL is what those processes get as theirs, so their SDK calls come back here
  # (through the fault proxy, when there is one). infra/emulator/ministack_platform.py runs
  # MiniStack with what it leaves out of the platform: a stream mapping's retries and OnFailure
  # record after MaximumRetryAttempts, and AWS/Lambda and AWS/SQS metrics for every invocation
  # and queue (its doc comment says how).
  # ... and with its log streams, metric eviction and alarm evaluation kept from growing with
  # the history; --selftest checks those against this MiniStack before it starts.
  "$tools/ministack/bin/python" infra/emulator/ministack_platform.py --selftest
  echo "emulator: MiniStack on $endpoint"
  on_failure="$work/ministack.log"
  start_bg "$work/ministack.log" env GATEWAY_PORT="$port" BIND_HOST=127.0.0.1 AWS_ENDPOINT_URL="$functions_endpoint" \
    LAMBDA_EXECUTOR=local IOT_MTLS_ENABLED=0 SFTP_ENABLED=0 PERSIST_STATE=0 TMPDIR="$work" \
    STATE_DIR="$work/state" S3_DATA_DIR="$work/s3" LOG_LEVEL=INFO \
    "$tools/ministack/bin/python" infra/emulator/ministack_platform.py
  ministack_pid=$!
fi

# Everything below talks to the emulator only: no profile, fixed test credentials.
export AWS_ENDPOINT_URL="$endpoint" AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test SAM_CLI_TELEMETRY=0
unset AWS_PROFILE AWS_SESSION_TOKEN
if [[ -n "${ministack_pid:-}" ]]; then
  wait_http "$endpoint/_ministack/health" "$ministack_pid"
fi
if [[ -n "${fault_proxy_pid:-}" ]]; then
  wait_http "$fault_proxy_url/_faultproxy/healthz" "$fault_proxy_pid"
  export RESETNOTIFY_FAULT_PROXY_URL="$fault_proxy_url"
fi

# Functions that run in containers (LocalStack) reach the simulator through the Docker host:
# RESETNOTIFY_SIM_BIND and RESETNOTIFY_SIM_HOST say how (default: loopback, for MiniStack,
# whose functions are host processes).
# The chain is simulator,simulator2,twilio, as make e2e's: a second simulator stands in for a
# second provider, a third, in its Twilio mode, for Twilio (Twilio's Messages API, signed
# status callbacks, a message list that lags ten minutes). The stack sends to the first one's
# send port, which the suite closes to have every connection refused (POST
# /control/connections on its control port, sim_port).
sim_port=$(free_port)
sim_send_port=$(free_port)
sim_url="http://${RESETNOTIFY_SIM_HOST:-127.0.0.1}:$sim_send_port"
sim2_port=$(free_port)
sim2_url="http://${RESETNOTIFY_SIM_HOST:-127.0.0.1}:$sim2_port"
twilio_port=$(free_port)
twilio_url="http://${RESETNOTIFY_SIM_HOST:-127.0.0.1}:$twilio_port"
webhook_token=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
# Twilio's account SID, auth token and API key as Twilio's look, random per run, in files only
# this user reads: the token (the simulator signs with it, the suite signs and forges with it)
# in the SecureString TwilioWebhookFunction reads; the key, <key SID>:<key secret>, which the
# simulator requires, in the one dispatch and reconcile read.
twilio_account="AC$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
twilio_token_file="$work/twilio-auth-token"
(umask 077 && python3 -c 'import secrets; print(secrets.token_hex(16))' >"$twilio_token_file")
twilio_key_file="$work/twilio-api-key"
(umask 077 && python3 -c 'import secrets; print("SK" + secrets.token_hex(16) + ":" + secrets.token_hex(16))' >"$twilio_key_file")
# Twilio's status callbacks go to the URL dispatch gives each message, and their signature
# covers that URL: it must be the one the emulator serves the API at, not AWS's execute-api
# shape. The API's id is pinned (MiniStack's ms-custom-id tag; LocalStack's is _custom_id_:
# stack tags the deploy passes on to the API), so that URL is known before the deploy and given
# as CallbackBaseUrl; stackcheck checks the deployed callback outputs against the API it finds.
# The id is the stack name's hash: a stack deployed before on a long-lived emulator has it too.
api_id=$(printf %s "$stack" | sha256sum | cut -c1-8)
callback_base="$endpoint/_aws/execute-api/$api_id/\$default"
# One-minute digest periods (as make local's), closed 65 s after they end (the template's lowest
# grace, above the audit function's 60-s timeout; its default is 90): the digests and the
# archive step run within the suite, and e2e's upgrade test, whose period is the one open when
# the suite starts, waits the least at its end.
overrides=(Target=emulator "Architecture=$architecture" SmsProviders=simulator,simulator2,twilio "SmsSimulatorUrl=$sim_url"
  "SmsSimulator2Url=$sim2_url" "TwilioBaseUrl=$twilio_url" "TwilioAccountSid=$twilio_account" TwilioFrom=+15005550006
  "CallbackBaseUrl=$callback_base" SmsTimeoutSeconds=2 SmsVisibilitySeconds=2 LogLevel=INFO
  AuditDigestPeriodMinutes=1 AuditDigestGraceSeconds=65)
# Behind the fault proxy (the game days) the audit lag bounds fit faults of minutes: digests 90 s
# behind, archives 60 s (defaults 900 and 3600; the game day's audit-late scenario crosses both).
# They are alarm thresholds and the digest function's warning; auditctl keeps its own bound.
if [[ -n "$fault_proxy" && "$fault_proxy" != 0 ]]; then
  overrides+=(AuditDigestLagBoundSeconds=90 AuditArchiveLagBoundSeconds=60)
fi

# CloudFormation cannot create SecureStrings: the pepper, the request fingerprint key and the
# simulator's webhook token are created first, as for AWS (the template's default names). A
# stack deployed before keeps the ones it has.
go build -o "$work/stackcheck" ./infra/stackcheck
"$work/stackcheck" secret -name /resetnotify/destination-pepper
"$work/stackcheck" secret -name /resetnotify/request-fingerprint-key
"$work/stackcheck" secret -name /resetnotify/simulator-webhook-token -value "$webhook_token"
"$work/stackcheck" secret -name /resetnotify/twilio-auth-token -value "$(cat "$twilio_token_file")"
"$work/stackcheck" secret -name /resetnotify/twilio-api-key -value "$(cat "$twilio_key_file")"

# The first deploy: this checkout, or the release RESETNOTIFY_EMULATOR_FROM names (a tag or commit,
# its tree taken with git archive into the work directory), which the upgrade game day then
# replaces with this checkout mid-load (infra/emulator/deploy.sh, exported to the command below).
printf '%s\n' "${overrides[@]}" >"$work/overrides"
src=$root
if [[ -n "${RESETNOTIFY_EMULATOR_FROM:-}" ]]; then
  src="$work/from"
  mkdir -p "$src"
  git archive "$RESETNOTIFY_EMULATOR_FROM" | tar -x -C "$src"
  echo "emulator: deploying the release $RESETNOTIFY_EMULATOR_FROM ($(git rev-parse --short "$RESETNOTIFY_EMULATOR_FROM"))"
fi
emulator_deploy "$src"
export RESETNOTIFY_EMULATOR_WORK="$work" RESETNOTIFY_EMULATOR_STACK="$stack" RESETNOTIFY_EMULATOR_API_ID="$api_id" \
  RESETNOTIFY_EMULATOR_PID="${ministack_pid:-}" \
  RESETNOTIFY_EMULATOR_DEPLOYED="${RESETNOTIFY_EMULATOR_FROM:-}"
# shellcheck disable=SC1091
source "$work/stack.env"

go build -o "$work/smssim" ./infra/smssim/cmd
start_bg "$work/smssim.log" "$work/smssim" -addr "${RESETNOTIFY_SIM_BIND:-127.0.0.1}:$sim_port" \
  -send-addr "${RESETNOTIFY_SIM_BIND:-127.0.0.1}:$sim_send_port" \
  -webhook "$RESETNOTIFY_E2E_API/v1/provider-events/simulator" -webhook-token "$webhook_token" \
  -delivery-delay 2s -visibility 2s
wait_http "http://127.0.0.1:$sim_port/healthz" $!
wait_http "http://127.0.0.1:$sim_send_port/healthz" $!
start_bg "$work/smssim2.log" "$work/smssim" -provider simulator2 -addr "${RESETNOTIFY_SIM_BIND:-127.0.0.1}:$sim2_port" \
  -webhook "$RESETNOTIFY_E2E_API/v1/provider-events/simulator" -webhook-token "$webhook_token" \
  -delivery-delay 2s -visibility 2s
wait_http "http://127.0.0.1:$sim2_port/healthz" $!
# Twilio's status callbacks are posted to the StatusCallback URL of each message, not -webhook.
# Its delivery delay is longer than a send's timeout (SmsTimeoutSeconds), so that the callback
# of an attempt whose answer was lost arrives after dispatch recorded it unknown, as a late one does.
start_bg "$work/smssim-twilio.log" "$work/smssim" -provider twilio -addr "${RESETNOTIFY_SIM_BIND:-127.0.0.1}:$twilio_port" \
  -twilio-account-sid "$twilio_account" -twilio-auth-token-file "$twilio_token_file" \
  -twilio-api-key-file "$twilio_key_file" \
  -delivery-delay 6s -list-lag 10m
wait_http "http://127.0.0.1:$twilio_port/healthz" $!
export RESETNOTIFY_E2E_SIM="http://127.0.0.1:$sim_port" RESETNOTIFY_E2E_SIM2="http://127.0.0.1:$sim2_port" RESETNOTIFY_E2E=required \
  RESETNOTIFY_E2E_TWILIO_SIM="http://127.0.0.1:$twilio_port" RESETNOTIFY_E2E_TWILIO_TOKEN_FILE="$twilio_token_file"
# The EMF bridge: the functions' metrics, from their log groups, into the emulator's CloudWatch.
# It reads each group from its start, so what the stack logged before is not lost; it starts
# only now because its connections must not take the simulators' ports before they are bound.
# GAMEDAY_SABOTAGE=bridge-off leaves it out: a game day must then fail, naming the alarms whose
# metrics went silent.
go build -o "$work/emfbridge" ./infra/emfbridge/cmd
if [[ "${GAMEDAY_SABOTAGE:-}" == bridge-off ]]; then
  echo "emulator: GAMEDAY_SABOTAGE=bridge-off: no EMF bridge"
else
  start_bg "$work/emfbridge.log" "$work/emfbridge"
fi
export RESETNOTIFY_E2E_STACK="$stack"
# The second caller of the ownership tests: a session of a role, assumed through the emulator's
# STS (MiniStack passes each SigV4 caller's identity to the function, unverified; any role ARN
# may be assumed while its AUTH is off). The first caller is the suite's own key.
export RESETNOTIFY_E2E_SECOND_CALLER_ROLE="arn:aws:iam::000000000000:role/resetnotify-e2e-second"
# Every port of this run is bound: another run may set up now.
setup_unlock

if [[ $# -gt 0 ]]; then
  echo "emulator: $*"
  fg "$@"
  exit 0
fi
echo "emulator: go test ./infra/e2e/..."
fg go test -count=1 -v ./infra/e2e/...
# The functions' EMF lines as metrics, and the template's alarms evaluated over them.
echo "emulator: go test -run TestEmulator ./infra/alarmeval/"
fg go test -count=1 -v -run '^TestEmulator' ./infra/alarmeval/
# The routes `sam local start-api` would serve (the SAM CLI's own provider, no Docker needed).
fg go test -count=1 -run 'TestRoutes' ./infra/localapi/
# The Docker-free way to invoke a deployed function with a sample event (docs/local.md, "The black-box suite and the emulator").
echo "emulator: sam remote invoke IntakeFunction -e events/intake-get-not-found.json"
fg "$tools/sam/bin/sam" remote invoke IntakeFunction --stack-name "$stack" \
  --event-file events/intake-get-not-found.json --output json >"$work/remote-invoke.json" 2>"$work/remote-invoke.err" ||
  { cat "$work/remote-invoke.err" >&2; exit 1; }
grep -q '\\"statusCode\\": *404\|"statusCode": *404' "$work/remote-invoke.json" ||
  { echo "emulator: sam remote invoke did not answer 404:" >&2; cat "$work/remote-invoke.json" >&2; exit 1; }
echo "emulator: sam remote invoke answered 404 problem+json, as the event expects"
