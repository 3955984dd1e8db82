# lib.sh holds what infra/emulator/emulator.sh and infra/local/local-e2e.sh share: free loopback ports, and
# starting processes in process groups of their own that are stopped, by PID, on exit.
# Source it after `set -euo pipefail`; it sets the EXIT, INT and TERM traps and $work, a scratch
# directory kept (and named) when the script fails.

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

work=$(mktemp -d "${TMPDIR:-/tmp}/resetnotify-${0##*/}.XXXXXX")
# pids are the process groups started with start_bg; fg_pid is the one fg waits for.
pids=()
fg_pid=
# on_failure names a log to show when the script fails.
on_failure=

# setup_lock FILE takes an exclusive lock on FILE (created, with its folder), waiting for the
# run that holds it; setup_unlock (and any exit) releases it. The processes start_bg starts do
# not inherit it.
lock_fd=
setup_lock() {
  mkdir -p "$(dirname "$1")"
  exec {lock_fd}>>"$1"
  if ! flock -n "$lock_fd"; then
    echo "${0##*/}: waiting for another run of this checkout to finish its setup ($1)"
    flock -w 3600 "$lock_fd" || { echo "${0##*/}: $1 still locked after an hour" >&2; return 1; }
  fi
}
setup_unlock() {
  [[ -n "$lock_fd" ]] || return 0
  flock -u "$lock_fd" || true
  exec {lock_fd}>&-
  lock_fd=
}

cleanup() {
  local rc=$?
  setup_unlock
  [[ -z "$fg_pid" ]] || pids+=("$fg_pid")
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  if [[ $rc -ne 0 ]]; then
    echo "${0##*/}: failed (exit $rc); logs in $work" >&2
    if [[ -n "$on_failure" && -f "$on_failure" ]]; then tail -n 40 "$on_failure" >&2; fi
  else
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_bg LOG CMD... starts CMD in a process group of its own, output to LOG; $! is its PID.
start_bg() {
  local log=$1
  shift
  if [[ -n "$lock_fd" ]]; then
    setsid "$@" >"$log" 2>&1 {lock_fd}>&- &
  else
    setsid "$@" >"$log" 2>&1 &
  fi
  pids+=($!)
}

# fg CMD... runs CMD in a process group of its own and waits for it, so that a signal reaches
# the trap at once and cleanup stops the command with everything it started.
fg() {
  setsid "$@" &
  fg_pid=$!
  local rc=0
  wait "$fg_pid" || rc=$?
  fg_pid=
  return $rc
}

# wait_http URL PID waits until URL answers, failing when PID has exited.
wait_http() {
  local url=$1 pid=$2
  for _ in $(seq 300); do
    curl -s -o /dev/null "$url" && return 0
    kill -0 "$pid" 2>/dev/null || { echo "${0##*/}: the process for $url exited" >&2; return 1; }
    sleep 0.2
  done
  echo "${0##*/}: $url does not answer" >&2
  return 1
}
