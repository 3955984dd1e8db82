#!/usr/bin/env bash
# fuzz-api.sh fuzzes the API from openapi.yaml with schemathesis (property-based; pinned in
# .tools/api-venv by install-tools.sh) and fails on any server error or any answer outside the
# spec: status, content type, headers or body.
#
# Without RESETNOTIFY_FUZZ_URL it runs the local stack as `make local` does (bin/local, every
# function's real bootstrap from `make build` under the Lambda RIE) on a free loopback port,
# fuzzes it, and stops it by its PID however the run ends. With RESETNOTIFY_FUZZ_URL it fuzzes
# that base URL instead (nothing is started; nothing is signed, so only a local stack fits).
#
# FUZZ_MAX_EXAMPLES (default 50) and FUZZ_SEED (default 13) set the size and the seed of the
# run; the same seed replays the same cases.
#
# The checks leave out negative_data_rejection: the local stack checks no SigV4 signature, so a
# request without Authorization is served there, where API Gateway would answer 403.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
schemathesis="$root/.tools/api-venv/bin/schemathesis"
[[ -x "$schemathesis" ]] || { echo "fuzz-api: $schemathesis missing; run make tools" >&2; exit 1; }

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance
url=${RESETNOTIFY_FUZZ_URL:-}
local_pid=""
logs=""

stop_local() {
  if [[ -n "$local_pid" ]]; then
    kill -TERM "$local_pid" 2>/dev/null || true
    wait "$local_pid" 2>/dev/null || true
    local_pid=""
  fi
}
trap stop_local EXIT

if [[ -z "$url" ]]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p bin
  go build -o bin/local ./infra/local
  logs=$(mktemp -d)
  echo "fuzz-api: starting the local stack on 127.0.0.1:$port (logs in $logs)"
  RESETNOTIFY_PORT=$port bin/local >"$logs/stdout" 2>"$logs/stderr" &
  local_pid=$!
  for _ in $(seq 1 240); do
    if grep -q '^ready: ' "$logs/stdout" 2>/dev/null; then
      break
    fi
    if ! kill -0 "$local_pid" 2>/dev/null; then
      echo "fuzz-api: the local stack exited before it was ready:" >&2
      tail -20 "$logs/stderr" >&2
      exit 1
    fi
    sleep 0.5
  done
  url=$(sed -n 's/^ready: //p' "$logs/stdout")
  [[ -n "$url" ]] || { echo "fuzz-api: the local stack was not ready within 120 s" >&2; tail -20 "$logs/stderr" >&2; exit 1; }
fi

echo "fuzz-api: schemathesis against $url"
status=0
SCHEMATHESIS_HOOKS="$root/infra/fuzz_hooks.py" "$schemathesis" run "$root/docs/openapi.yaml" \
  --url "$url" --checks "$checks" --workers 1 \
  --max-examples "${FUZZ_MAX_EXAMPLES:-50}" --seed "${FUZZ_SEED:-13}" || status=$?
stop_local
if [[ $status -ne 0 ]]; then
  echo "fuzz-api: schemathesis found answers outside openapi.yaml or server errors (exit $status)" >&2
  [[ -n "$logs" ]] && echo "fuzz-api: the local stack's logs are in $logs" >&2
elif [[ -n "$logs" ]]; then
  rm -rf "$logs"
fi
exit "$status"
