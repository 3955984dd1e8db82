#!/usr/bin/env bash
# fixtures.sh REV writes the shapes release REV's code writes (a record, a dispatch message, a
# receipt, an audit entry) into infra/compat/testdata/<REV's tag, or its short commit>/, and has
# REV's decoders read the shapes this checkout writes: it checks REV out in a temporary worktree,
# copies this checkout's infra/compat into it and runs it there, so the encoders and decoders
# are REV's own. infra/compat must build against REV; make compat-fixtures COMPAT_FROM=REV runs
# it.
set -euo pipefail
rev=${1:?usage: infra/compat/fixtures.sh <tag or commit>}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
name=$(git -C "$root" describe --tags --exact-match "$rev" 2>/dev/null || git -C "$root" rev-parse --short "$rev")
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$root" worktree add --detach "$tmp/src" "$rev" >/dev/null
mkdir -p "$tmp/src/infra/compat/cmd"
cp "$root"/infra/compat/doc.go "$root"/infra/compat/ddbjson.go "$root"/infra/compat/shapes.go \
  "$root"/infra/compat/read.go "$tmp/src/infra/compat/"
cp "$root"/infra/compat/cmd/main.go "$tmp/src/infra/compat/cmd/"
(cd "$root" && go run ./infra/compat/cmd -out "$tmp/current")
(cd "$tmp/src" && go run ./infra/compat/cmd -out "$root/infra/compat/testdata/$name")
echo "compat: the shapes $rev writes are in infra/compat/testdata/$name"
(cd "$tmp/src" && go run ./infra/compat/cmd -check "$tmp/current")
echo "compat: $rev reads the shapes this checkout writes"
