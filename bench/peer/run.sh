#!/usr/bin/env bash
# Runs contend.mjs (node-redlock contention benchmark) with the pinned packages,
# installing them first when node_modules is missing or older than the lockfile.
# Usage: bench/peer/run.sh --nodes ... --processes N ... (see README.md)
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# npm ci writes node_modules/.package-lock.json as it completes: its age is the install's.
stamp="$dir/node_modules/.package-lock.json"
if [[ ! -f $stamp || $dir/package-lock.json -nt $stamp ]]; then
  # flock: two runs started together must not install into one directory at once.
  # npm's output goes to stderr so that stdout carries only the result lines.
  # --prefer-offline: packages already in the npm cache need no registry.
  (
    flock 9
    if [[ ! -f $stamp || $dir/package-lock.json -nt $stamp ]]; then
      cd "$dir" && npm ci --prefer-offline --no-audit --no-fund >&2
    fi
  ) 9<"$dir/package.json"
fi
exec node "$dir/contend.mjs" "$@"
