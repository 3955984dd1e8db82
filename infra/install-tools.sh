#!/usr/bin/env bash
# install-tools.sh installs the local emulators and linters into .tools/ at the repository root:
#   .tools/dynamodb-local/   DynamoDB Local (DynamoDBLocal.jar + DynamoDBLocal_lib), taken from the
#                            npm package amplify-dynamodb-simulator, which ships AWS's own engine.
#   .tools/venv/             a Python virtualenv with moto[server] (SQS) and cfn-lint.
#   .tools/api-venv/         a second virtualenv with the API contract tools of
#                            infra/api-tools.txt (openapi-spec-validator, schemathesis), every
#                            dependency pinned by infra/api-tools.constraints.txt; kept apart so
#                            that their dependencies cannot break moto or cfn-lint.
#   .tools/bin/aws-lambda-rie the Lambda Runtime Interface Emulator, built with go install.
# Each part writes a stamp file naming what it installed, so a second run is instant and a change
# of pinned version reinstalls only that part. It needs Java 17, npm and Python 3.11 on PATH.
set -euo pipefail

DYNAMODB_SIMULATOR_PKG="amplify-dynamodb-simulator@2.9.30"
PY_REQUIREMENTS=("moto[server]==5.2.1" "cfn-lint==1.51.0")
# The Lambda Runtime Interface Emulator, from the Go module proxy: make local runs each
# function's real bootstrap under it.
RIE_MODULE="github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/.tools"
mkdir -p "$tools"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "install-tools: $1 not found on PATH ($2)" >&2; exit 1; }
}

install_dynamodb_local() {
  local dest="$tools/dynamodb-local" stamp="$tools/.dynamodb-local.stamp"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$DYNAMODB_SIMULATOR_PKG" && -f "$dest/DynamoDBLocal.jar" ]]; then
    return 0
  fi
  need npm "needed to fetch DynamoDB Local"
  need java "needed to run DynamoDB Local"
  echo "install-tools: DynamoDB Local from $DYNAMODB_SIMULATOR_PKG"
  # Not local: the EXIT trap may run after this function's scope is gone.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$DYNAMODB_SIMULATOR_PKG" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  if [[ ! -f "$tmp/package/emulator/DynamoDBLocal.jar" ]]; then
    echo "install-tools: $DYNAMODB_SIMULATOR_PKG has no package/emulator/DynamoDBLocal.jar" >&2
    exit 1
  fi
  rm -rf "$dest" "$stamp"
  mv "$tmp/package/emulator" "$dest"
  rm -rf "$tmp"
  trap - EXIT
  echo "$DYNAMODB_SIMULATOR_PKG" >"$stamp"
}

install_venv() {
  local venv="$tools/venv" stamp="$tools/.venv.stamp"
  local want
  want=$(python3 --version 2>&1; printf '%s\n' "${PY_REQUIREMENTS[@]}")
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/moto_server" && -x "$venv/bin/cfn-lint" ]]; then
    return 0
  fi
  need python3 "needed for moto and cfn-lint"
  echo "install-tools: Python virtualenv with ${PY_REQUIREMENTS[*]}"
  rm -rf "$venv" "$stamp"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_REQUIREMENTS[@]}"
  echo "$want" >"$stamp"
}

install_api_venv() {
  local venv="$tools/api-venv" stamp="$tools/.api-venv.stamp"
  local reqs="$root/infra/api-tools.txt" constraints="$root/infra/api-tools.constraints.txt"
  local want
  want=$(python3 --version 2>&1; cat "$reqs" "$constraints")
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/openapi-spec-validator" && -x "$venv/bin/schemathesis" ]]; then
    return 0
  fi
  need python3 "needed for openapi-spec-validator and schemathesis"
  echo "install-tools: API contract tools from infra/api-tools.txt"
  rm -rf "$venv" "$stamp"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs" -c "$constraints"
  echo "$want" >"$stamp"
}

install_rie() {
  local stamp="$tools/.rie.stamp"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$RIE_MODULE" && -x "$tools/bin/aws-lambda-rie" ]]; then
    return 0
  fi
  need go "needed to build the Lambda Runtime Interface Emulator"
  echo "install-tools: aws-lambda-rie from the Go module proxy"
  rm -f "$stamp"
  GOBIN="$tools/bin" GOFLAGS=-buildvcs=false go install "$RIE_MODULE"
  echo "$RIE_MODULE" >"$stamp"
}

install_dynamodb_local
install_venv
install_api_venv
install_rie
