#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Runs an example against redis-servers of its own (the ctest driver of examples/).
#
#   run_example.sh N PROGRAM [ARGS...]
#
# Starts N redis-servers on free loopback ports (scripts/redis-nodes.sh), runs PROGRAM with
# their URLs and stops them again however it ends. An argument "@URLS@" is replaced by the
# URLs as separate arguments, "@NODES@" by the comma-separated list; when neither appears,
# "--nodes URL,URL,..." goes before ARGS. Exits with PROGRAM's status. PROGRAM is stopped after
# REDLOCK_EXAMPLE_TIMEOUT seconds (default 100, below the tests' ctest TIMEOUT of 120), so
# that the servers are stopped even when it hangs.
set -euo pipefail

if [ $# -lt 2 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N PROGRAM [ARGS...]   (ARGS may contain @URLS@ or @NODES@)" >&2
  exit 2
fi
count=$1
program=$2
shift 2

# shellcheck source=scripts/redis-nodes.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/redis-nodes.sh"
trap redis_nodes_stop EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
redis_nodes_start "$count"

nodes=$(IFS=,; echo "${REDIS_NODE_URLS[*]}")
args=()
placed=0
for arg in "$@"; do
  case $arg in
    @URLS@) args+=("${REDIS_NODE_URLS[@]}"); placed=1 ;;
    @NODES@) args+=("$nodes"); placed=1 ;;
    *) args+=("$arg") ;;
  esac
done
if [ $placed = 0 ]; then
  args=(--nodes "$nodes" "${args[@]}")
fi

echo "== $program ${args[*]}"
# In the background so that a signal to this script runs its traps at once (bash defers traps
# while a foreground child runs); timeout forwards the TERM to the example.
limit=${REDLOCK_EXAMPLE_TIMEOUT:-100}
timeout --kill-after=5 "$limit" "$program" "${args[@]}" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || true; exit 129' HUP
trap 'kill -TERM "$child" 2>/dev/null || true; exit 130' INT
trap 'kill -TERM "$child" 2>/dev/null || true; exit 143' TERM
status=0
wait "$child" || status=$?
if [ "$status" = 124 ]; then
  echo "run_example: $program did not finish within ${limit} s" >&2
fi
exit "$status"
