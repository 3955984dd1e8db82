#!/usr/bin/env bash
# gameday.sh runs the game day's scenarios in lanes (make gameday):
#
#   infra/gameday/gameday.sh [report folder]     default: gameday-reports/<UTC time>
#
# GAMEDAY_LANES (default 3) lanes run at once, each on a stack of its own: its own
# `RESETNOTIFY_FAULT_PROXY=1 infra/emulator/emulator.sh` run (MiniStack, fault proxy, simulators, EMF
# bridge, ports, work directory) running `infra/gameday/cmd -scenarios <the lane's> -out
# <folder>/lane-<i>`, its scenarios one after the other; so no scenario shares a stack, or an
# alarm, with another lane's. `infra/gameday/cmd -plan` shares the scenarios of GAMEDAY_SCENARIOS
# (default all; a comma-separated list runs only those) among the lanes, longest first onto the
# least loaded lane. A lane whose first scenario has a From (the upgrade) deploys that release
# first (RESETNOTIFY_EMULATOR_FROM; `infra/gameday/cmd -from` names it). The emulator runs wait for each other's setup (emulator.sh's lock), so the
# lanes start a few minutes apart, the first one first: it has the longest scenario.
#
# Each lane's output is in <folder>/lane-<i>/run.log, beside its own report. Once every lane has
# ended, `infra/gameday/cmd -merge` writes one gameday.md and gameday.json (and the charts) into the
# folder, with the figures over all lanes, and prints them; the script exits as it does: 1 when
# a scenario did not pass or a lane failed. On any exit it stops the lanes it started, by PID
# (each emulator.sh stops what it started).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

out=${1:-gameday-reports/$(date -u +%Y%m%dT%H%M%SZ)}
lanes=${GAMEDAY_LANES:-3}
scenarios=${GAMEDAY_SCENARIOS:-all}
[[ "$lanes" =~ ^[1-9][0-9]*$ ]] || { echo "gameday: GAMEDAY_LANES=$lanes: want a number of lanes, 1 or more" >&2; exit 2; }

mkdir -p "$out"
bin=$(mktemp -d "${TMPDIR:-/tmp}/resetnotify-gameday.XXXXXX")
lane_pids=()
stop_lanes() {
  local rc=$? pid
  for pid in "${lane_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${lane_pids[@]}"; do
    # emulator.sh's trap stops what it started (up to 5 s a process group).
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$bin"
  exit "$rc"
}
trap stop_lanes EXIT
trap 'exit 130' INT TERM

# One build of the runner for every lane (and for the plan and the merge).
go build -o "$bin/gameday" ./infra/gameday/cmd
plan_out=$("$bin/gameday" -plan -lanes "$lanes" -scenarios "$scenarios")
mapfile -t plan <<<"$plan_out"
echo "gameday: ${#plan[@]} lanes (GAMEDAY_LANES=$lanes), report in $out"

dirs=()
for line in "${plan[@]}"; do
  IFS=$'\t' read -r lane list minutes <<<"$line"
  dir="$out/lane-$lane"
  mkdir -p "$dir"
  rm -f "$dir/exit"
  printf '%s\n' "$list" >"$dir/scenarios"
  echo "gameday: lane $lane, about $minutes min once its stack is up: $list (log: $dir/run.log)"
  # A lane whose first scenario starts from an earlier release (the upgrade) deploys that one.
  from=$("$bin/gameday" -from -scenarios "$list")
  RESETNOTIFY_EMULATOR_FROM=$from RESETNOTIFY_FAULT_PROXY=1 ./infra/emulator/emulator.sh "$bin/gameday" -scenarios "$list" -out "$dir" >"$dir/run.log" 2>&1 &
  lane_pids+=($!)
  dirs+=("$dir")
done

for i in "${!lane_pids[@]}"; do
  rc=0
  wait "${lane_pids[$i]}" || rc=$?
  echo "$rc" >"${dirs[$i]}/exit"
  echo "gameday: lane $((i + 1)) ended, exit $rc ($(grep -c ': passed true' "${dirs[$i]}/run.log" || true) scenarios passed)"
  [[ $rc -eq 0 ]] || tail -n 5 "${dirs[$i]}/run.log" | sed "s/^/gameday: lane $((i + 1)): /" >&2
done
lane_pids=()

merge=$(IFS=,; echo "${dirs[*]}")
"$bin/gameday" -merge "$merge" -out "$out"
