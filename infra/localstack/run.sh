#!/usr/bin/env bash
# run.sh deploys template.yaml to LocalStack Pro in Docker and runs the black-box suite against
# it, as `make emulator-e2e` does with MiniStack. UNTESTED on the project's machines (no Docker
# there); see README.md beside this file for why the community edition cannot run it.
#
#   LOCALSTACK_AUTH_TOKEN=... LOCALSTACK_IMAGE=localstack/localstack-pro:<tag> infra/localstack/run.sh [command ...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
: "${LOCALSTACK_AUTH_TOKEN:?the LocalStack community edition has no API Gateway v2, which the API of the template needs: set LOCALSTACK_AUTH_TOKEN to a Pro token (see infra/localstack/README.md)}"
: "${LOCALSTACK_IMAGE:?set LOCALSTACK_IMAGE to a pinned tag (see infra/localstack/README.md)}"
command -v docker >/dev/null || { echo "localstack: needs docker" >&2; exit 1; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
name="resetnotify-localstack-$port"
# LocalStack runs Lambda functions in containers of their own: it needs the Docker socket.
docker run -d --rm --name "$name" -p "127.0.0.1:$port:4566" \
  -e LOCALSTACK_AUTH_TOKEN="$LOCALSTACK_AUTH_TOKEN" \
  -v /var/run/docker.sock:/var/run/docker.sock "$LOCALSTACK_IMAGE" >/dev/null
trap 'docker stop "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$port/_localstack/health" >/dev/null && break
  sleep 1
done

# The functions' containers reach the simulator on the Docker host.
RESETNOTIFY_EMULATOR_ENDPOINT="http://127.0.0.1:$port" RESETNOTIFY_SIM_BIND=0.0.0.0 \
  RESETNOTIFY_SIM_HOST="${RESETNOTIFY_SIM_HOST:-host.docker.internal}" ./infra/emulator/emulator.sh "$@"
