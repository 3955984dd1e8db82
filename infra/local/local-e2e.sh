#!/usr/bin/env bash
# local-e2e.sh runs a command against the local stack (infra/local, `make local`):
#
#   infra/local/local-e2e.sh [command ...]     default: the black-box suite (make e2e)
#
# It builds the bootstraps for this machine (make build), starts infra/local on a free loopback
# port, waits for its `ready:` line, exports the endpoints it prints (RESETNOTIFY_E2E_API,
# RESETNOTIFY_E2E_SIM, RESETNOTIFY_E2E_SIM2, RESETNOTIFY_E2E_SINCH_*, RESETNOTIFY_E2E_TWILIO_*,
# RESETNOTIFY_E2E_EXAMPLES, AUDIT_TABLE,
# AWS_ENDPOINT_URL_* ...), runs the command, and stops the
# local stack, by PID, on any exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=infra/lib.sh
source infra/lib.sh
./infra/install-tools.sh
fg make --no-print-directory build GOARCH="$(go env GOARCH)" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
go build -o "$work/local" ./infra/local

port=$(free_port)
on_failure="$work/local.err"
RESETNOTIFY_PORT=$port setsid "$work/local" >"$work/local.out" 2>"$work/local.err" &
pids+=($!)
for _ in $(seq 600); do
  grep -qs "^ready: " "$work/local.out" && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "local-e2e: infra/local exited" >&2; exit 1; }
  sleep 0.2
done
grep -q '^ready: ' "$work/local.out" || { echo "local-e2e: infra/local never became ready" >&2; exit 1; }
# shellcheck disable=SC1090
source <(grep '^export ' "$work/local.out")
RESETNOTIFY_E2E_API=$(sed -n 's/^ready: //p' "$work/local.out")
RESETNOTIFY_E2E_SIM=$(sed -n 's/^sms simulator: \([^ ]*\).*/\1/p' "$work/local.out")
RESETNOTIFY_E2E_SIM2=$(sed -n 's/^sms simulator2: \([^ ]*\).*/\1/p' "$work/local.out")
# The suite stands in for Sinch at its webhook route, with the token infra/local wrote to a file.
RESETNOTIFY_E2E_SINCH_WEBHOOK=$(sed -n 's/^sinch webhook: \([^ ]*\) .*/\1/p' "$work/local.out")
RESETNOTIFY_E2E_SINCH_TOKEN_FILE=$(sed -n 's/^sinch webhook: .*(its token in \([^)]*\))$/\1/p' "$work/local.out")
# Twilio is the chain's third provider: the suite drives its simulator and stands in for Twilio
# (and for a forger) at its status callback route, with the auth token infra/local wrote to a file.
RESETNOTIFY_E2E_TWILIO_SIM=$(sed -n 's/^twilio simulator: \([^ ]*\) .*/\1/p' "$work/local.out")
RESETNOTIFY_E2E_TWILIO_TOKEN_FILE=$(sed -n 's/^twilio simulator: .*its auth token in \([^)]*\))$/\1/p' "$work/local.out")
RESETNOTIFY_E2E_TWILIO_WEBHOOK=$(sed -n 's/^twilio webhook: \([^ ]*\)$/\1/p' "$work/local.out")
# The documented examples (infra/e2e/examples_test.go) run against this stack only: it checks no
# signature, and it is fresh, so the examples' keys and numbers are unused.
RESETNOTIFY_E2E_EXAMPLES=1
# The second caller of the ownership tests: the local gateway takes its header as another role.
RESETNOTIFY_E2E_SECOND_CALLER_HEADER="$(sed -n 's/^callers: .* the header \([^:]*\): .*/\1/p' "$work/local.out"): resetnotify-e2e-second"
export RESETNOTIFY_E2E_API RESETNOTIFY_E2E_SIM RESETNOTIFY_E2E_SIM2 RESETNOTIFY_E2E=required \
  RESETNOTIFY_E2E_SINCH_WEBHOOK RESETNOTIFY_E2E_SINCH_TOKEN_FILE \
  RESETNOTIFY_E2E_TWILIO_SIM RESETNOTIFY_E2E_TWILIO_TOKEN_FILE RESETNOTIFY_E2E_TWILIO_WEBHOOK \
  RESETNOTIFY_E2E_EXAMPLES RESETNOTIFY_E2E_SECOND_CALLER_HEADER
echo "local-e2e: local stack at $RESETNOTIFY_E2E_API, simulator at $RESETNOTIFY_E2E_SIM"

if [[ $# -eq 0 ]]; then
  set -- go test -count=1 -v ./infra/e2e/...
fi
echo "local-e2e: $*"
fg "$@"
