#!/usr/bin/env bash
# Runs contend.mjs (node-redlock contention benchmark) with the pinned packages,
# installing them first when node_modules is missing or older than the lockfile.
# Usage: bench/peer/run.sh --nodes ... --processes N ... (see README.md)
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# npm ci writes node_modules/.package-lock.json last: it stands for the install.
stamp="$dir/node_modules/.package-lock.json"
if [[ ! -f $stamp || $dir/package-lock.json -nt $stamp ]]; then
  # flock: two runs started together must not install into one directory at once.
  # npm's output goes to stderr so that stdout carries only the result lines.
  (
    flock 9
    if [[ ! -f $stamp || $dir/package-lock.json -nt $stamp ]]; then
      cd "$dir" && npm ci --no-audit --no-fund >&2
    fi
  ) 9<"$dir/package.json"
fi
exec node "$dir/contend.mjs" "$@"
