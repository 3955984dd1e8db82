#!/usr/bin/env bash
# install-tools.sh installs the local emulators and linters into .tools/ at the repository root:
#   .tools/dynamodb-local/   DynamoDB Local (DynamoDBLocal.jar + DynamoDBLocal_lib), taken from the
#                            npm package amplify-dynamodb-simulator, which ships AWS's own engine.
#   .tools/venv/             a Python virtualenv with moto[server] (SQS), cfn-lint and the
#                            aws-sam-translator it uses (the IAM tests expand template.yaml with it).
#   .tools/checkov-venv/     checkov, in a virtualenv of its own so that its many dependencies
#                            cannot move moto's or cfn-lint's (make validate runs it).
#   .tools/bin/aws-lambda-rie the Lambda Runtime Interface Emulator, built with go install.
# Each part writes a stamp file naming what it installed, so a second run is instant and a change
# of pinned version reinstalls only that part. It needs Java 17, npm and Python 3.11 on PATH.
set -euo pipefail

DYNAMODB_SIMULATOR_PKG="amplify-dynamodb-simulator@2.9.30"
PY_REQUIREMENTS=("moto[server]==5.2.1" "cfn-lint==1.51.0" "aws-sam-translator==1.115.0")
CHECKOV_REQUIREMENTS=("checkov==3.3.30")
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

install_checkov() {
  local venv="$tools/checkov-venv" stamp="$tools/.checkov.stamp"
  local want
  want=$(python3 --version 2>&1; printf '%s\n' "${CHECKOV_REQUIREMENTS[@]}")
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/checkov" ]]; then
    return 0
  fi
  need python3 "needed for checkov"
  echo "install-tools: checkov virtualenv with ${CHECKOV_REQUIREMENTS[*]}"
  rm -rf "$venv" "$stamp"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${CHECKOV_REQUIREMENTS[@]}"
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
install_checkov
install_rie
