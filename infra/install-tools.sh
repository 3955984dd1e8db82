#!/usr/bin/env bash
# install-tools.sh installs the local emulators and linters into .tools/ at the repository root:
#   .tools/dynamodb-local/   DynamoDB Local (DynamoDBLocal.jar + DynamoDBLocal_lib), taken from the
#                            npm package amplify-dynamodb-simulator, which ships AWS's own engine.
#   .tools/venv/             a Python virtualenv with moto[server] (SQS), cfn-lint and the
#                            aws-sam-translator it uses (the IAM tests expand template.yaml with it).
#   .tools/checkov-venv/     checkov, in a virtualenv of its own so that its many dependencies
#                            cannot move moto's or cfn-lint's (make validate runs it).
#   .tools/api-venv/         a virtualenv with the API contract tools of
#                            infra/api-tools.txt (openapi-spec-validator, schemathesis), every
#                            dependency pinned by infra/api-tools.constraints.txt; kept apart so
#                            that their dependencies cannot break moto or cfn-lint.
#   .tools/bin/aws-lambda-rie the Lambda Runtime Interface Emulator, built with go install.
#   .tools/ministack/         MiniStack, the LocalStack-compatible emulator the template is deployed
#                            to (make emulator-e2e); make local runs it for CloudWatch only, the
#                            functions' metrics (moto cannot speak CloudWatch's current protocol).
# With the argument `emulator` (make emulator-e2e) it also installs, in its own virtualenv so its
# dependencies cannot break moto or cfn-lint (`sam`, for make deploy, the same):
#   .tools/sam/               the SAM CLI (sam build, sam deploy, sam remote invoke).
# Each part writes a stamp file naming what it installed, so a second run is instant and a change
# of pinned version reinstalls only that part. It needs Java 17, npm and Python 3.11 on PATH.
set -euo pipefail

DYNAMODB_SIMULATOR_PKG="amplify-dynamodb-simulator@2.9.30"
PY_REQUIREMENTS=("moto[server]==5.2.1" "cfn-lint==1.51.0" "aws-sam-translator==1.115.0")
CHECKOV_REQUIREMENTS=("checkov==3.3.30")
SAM_REQUIREMENT="aws-sam-cli==1.170.0"
# MiniStack applies the SAM transform with aws-sam-translator (the version cfn-lint pins here)
# and needs cryptography for KMS; its "full" extra would add Docker and database clients too.
MINISTACK_REQUIREMENTS=("ministack==1.5.33" "aws-sam-translator==1.115.0" "cryptography==50.0.2")
# MiniStack answers CloudWatch's rpc-v2-cbor protocol (the current Go SDK's and AWS CLI's
# CloudWatch clients: DescribeAlarms, GetMetricData) with cbor2, which its package lists only as
# a test extra. Installed beside the stamped requirements, so that a venv without it is topped
# up rather than rebuilt under a MiniStack that may be running.
MINISTACK_CBOR="cbor2==5.6.5"
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

# install_pyvenv <dir> <executable it must provide> <requirement>... creates .tools/<dir> with the
# pinned requirements, unless its stamp already names them.
install_pyvenv() {
  local name=$1 exe=$2
  shift 2
  local venv="$tools/$name" stamp="$tools/.$name.stamp"
  local want
  want=$(python3 --version 2>&1; printf '%s\n' "$@")
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/$exe" ]]; then
    return 0
  fi
  need python3 "needed for $*"
  echo "install-tools: Python virtualenv .tools/$name with $*"
  rm -rf "$venv" "$stamp"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
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

install_venv() {
  install_pyvenv venv moto_server "${PY_REQUIREMENTS[@]}"
  [[ -x "$tools/venv/bin/cfn-lint" ]] || { echo "install-tools: .tools/venv has no cfn-lint" >&2; exit 1; }
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
install_pyvenv checkov-venv checkov "${CHECKOV_REQUIREMENTS[@]}"
install_rie
install_pyvenv ministack ministack "${MINISTACK_REQUIREMENTS[@]}"
"$tools/ministack/bin/python" -c 'import cbor2' 2>/dev/null ||
  "$tools/ministack/bin/python" -m pip install --quiet --disable-pip-version-check "$MINISTACK_CBOR"
case "${1:-}" in
  "") ;;
  sam) install_pyvenv sam sam "$SAM_REQUIREMENT" ;;
  emulator) install_pyvenv sam sam "$SAM_REQUIREMENT" ;;
  *) echo "install-tools: unknown argument $1 (want sam or emulator)" >&2; exit 2 ;;
esac
