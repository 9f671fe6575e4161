#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# The flash-sale demo: 4 buyer processes sell 200 coupons, kept in a plain file, through one
# Redlock lock over 5 local redis-servers; then the sales log is checked coupon by coupon.
# First scripts/setup.sh installs what the library and the demo need, if anything is missing,
# and builds just the library and the demo program (a Release build in build-demo/, without the
# tests, the benchmark and the tool, which scripts/test.sh builds in build/). The servers run on
# free loopback ports and are stopped, and their temp dirs removed, however the demo ends.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --demo --target redlock --target flash_sale build-demo -DCMAKE_BUILD_TYPE=Release \
  -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_BUILD_TOOLS=OFF \
  -DREDLOCK_BUILD_EXAMPLES=ON

# shellcheck source=scripts/redis-nodes.sh
source scripts/redis-nodes.sh
work=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  redis_nodes_stop
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== starting 5 redis-servers"
redis_nodes_start 5
nodes=$(IFS=,; echo "${REDIS_NODE_URLS[*]}")
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-demo-XXXXXX")

echo "== selling 200 coupons with 4 buyer processes and one lock over the 5 servers:"
echo "   build-demo/examples/flash_sale --nodes $nodes --stock 200 --buyers 4"
status=0
build-demo/examples/flash_sale --nodes "$nodes" --stock 200 --buyers 4 --dir "$work/shop" ||
  status=$?
took="$((SECONDS / 60)) min $((SECONDS % 60)) s"
if [ "$status" -eq 0 ]; then
  echo "== result: every coupon sold exactly once (demo.sh took $took)"
else
  echo "== result: FAILED, flash_sale exited with status $status (demo.sh took $took)" >&2
fi
exit "$status"
