#!/usr/bin/env bash
# deploy.sh builds a source tree with `sam build` and deploys it with `sam deploy` to the stack
# infra/emulator/emulator.sh set up, with that run's parameter overrides, then checks the stack
# against the tree's template (infra/stackcheck), writing the suite's environment to
# $work/stack.env. emulator.sh sources it and calls emulator_deploy for its first deploy (this
# checkout, or the release RESETNOTIFY_EMULATOR_FROM names); run as a script by the command
# emulator.sh runs, it deploys a tree over the running stack (the upgrade game day):
#
#   infra/emulator/deploy.sh <source tree>      reads RESETNOTIFY_EMULATOR_WORK and _STACK, _API_ID
#
# The build goes to $work/sam/build, without a cache (an artifact of another architecture, or
# of the other release, must never be reused); --build-in-source runs the tree's own build-%
# targets in the tree.

# emulator_deploy SRC builds and deploys SRC; $work/overrides holds the parameter overrides, one
# a line.
emulator_deploy() {
  local src=$1 start goarch architecture
  local build_dir="$work/sam/build" sam="$tools/sam/bin/sam"
  local -a overrides
  mapfile -t overrides <"$work/overrides"
  goarch=$(go env GOARCH)
  architecture=$(printf '%s\n' "${overrides[@]}" | sed -n 's/^Architecture=//p')
  echo "emulator: sam build $src (GOARCH=$goarch, Architecture=$architecture)"
  start=$SECONDS
  emulator_fg env GOARCH="$goarch" "$sam" build --template-file "$src/template.yaml" --build-dir "$build_dir" \
    --no-cached --build-in-source --parameter-overrides "${overrides[@]}" >"$work/sam-build.log" 2>&1 ||
    { cat "$work/sam-build.log" >&2; return 1; }
  echo "emulator: sam build took $((SECONDS - start)) s"
  echo "emulator: sam deploy $stack"
  start=$SECONDS
  emulator_fg "$sam" deploy --template-file "$build_dir/template.yaml" --stack-name "$stack" \
    --resolve-s3 --capabilities CAPABILITY_IAM --no-confirm-changeset --no-fail-on-empty-changeset \
    --no-progressbar --tags "ms-custom-id=$api_id" "_custom_id_=$api_id" --parameter-overrides "${overrides[@]}" \
    >"$work/sam-deploy.log" 2>&1 || { cat "$work/sam-deploy.log" >&2; return 1; }
  echo "emulator: sam deploy took $((SECONDS - start)) s"
  # Verifies the stack against the tree's template and writes the suite's environment.
  [[ -x "$work/stackcheck" ]] || go build -o "$work/stackcheck" ./infra/stackcheck
  "$work/stackcheck" check -stack "$stack" -template "$src/template.yaml" -env "$work/stack.env"
}

# emulator_fg runs a command under emulator.sh's fg (its own process group, stopped by the
# script's trap), or as it is when this file runs as a script.
emulator_fg() {
  if declare -F fg >/dev/null; then fg "$@"; else "$@"; fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  src=$(cd "${1:?usage: infra/emulator/deploy.sh <source tree>}" && pwd)
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  cd "$root"
  tools="$root/.tools"
  work=${RESETNOTIFY_EMULATOR_WORK:?run under infra/emulator/emulator.sh}
  stack=${RESETNOTIFY_EMULATOR_STACK:?run under infra/emulator/emulator.sh}
  api_id=${RESETNOTIFY_EMULATOR_API_ID:?run under infra/emulator/emulator.sh}
  emulator_deploy "$src"
fi
