#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# The flash-sale demo: 4 buyer processes sell 200 coupons, kept in a plain file, through one
# Redlock lock over 5 local redis-servers; then the sales log is checked coupon by coupon.
# Installs what is missing and builds first (scripts/setup.sh). The servers run on free
# loopback ports and are stopped, and their temp dirs removed, however the demo ends.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh build

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

echo "== build/examples/flash_sale --nodes $nodes --stock 200 --buyers 4"
status=0
build/examples/flash_sale --nodes "$nodes" --stock 200 --buyers 4 --dir "$work/shop" || status=$?
exit "$status"
