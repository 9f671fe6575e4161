#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Runs redlock_bench several times and turns the runs into docs/benchmarks.md and the plot.
#
#   bench/run.sh BUILD_DIR [RUNS] [-- redlock_bench arguments]
#
# BUILD_DIR holds bench/redlock_bench (a Release build). RUNS defaults to 3; figures are
# their medians. Before each run the script waits (up to QUIET_WAIT seconds, default 600)
# until the machine is quiet: less than half a core busy over 2 s, so that a build running
# at the same time does not end up in the figures. Logs go to LOG_DIR (default
# ${TMPDIR:-/tmp}/redlock-bench-runs/DATE). Without arguments after --, every scenario runs
# with its defaults (about 4 minutes a run). The figures go to the generated block BLOCK
# (default results) of docs/benchmarks.md, e.g. BLOCK=cluster for runs of --scenario cluster.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:?usage: bench/run.sh BUILD_DIR [RUNS] [-- redlock_bench arguments]}
shift
runs=3
if [[ $# -gt 0 && $1 != -- ]]; then
    runs=$1
    shift
fi
[[ ${1:-} == -- ]] && shift
program=$build/bench/redlock_bench
[[ -x $program ]] || { echo "run.sh: no $program (build the bench target first)" >&2; exit 2; }
log_dir=${LOG_DIR:-${TMPDIR:-/tmp}/redlock-bench-runs/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$log_dir"

# Percent of all CPUs busy over the next 2 seconds, from /proc/stat.
busy_percent() {
    local a b
    read -r -a a < <(grep '^cpu ' /proc/stat)
    sleep 2
    read -r -a b < <(grep '^cpu ' /proc/stat)
    local total=0 idle i
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    idle=$((b[4] - a[4] + b[5] - a[5]))
    echo $(((total - idle) * 100 / (total > 0 ? total : 1)))
}

wait_quiet() {
    local cpus limit waited=0 busy
    cpus=$(nproc)
    limit=$((50 / cpus))  # half a core
    while :; do
        busy=$(busy_percent)
        if ((busy <= limit)); then
            return
        fi
        if ((waited >= ${QUIET_WAIT:-600})); then
            echo "run.sh: machine still ${busy}% busy after ${waited} s; running anyway" >&2
            return
        fi
        echo "run.sh: machine ${busy}% busy, waiting for it to calm down" >&2
        sleep 10
        waited=$((waited + 12))
    done
}

logs=()
for ((i = 1; i <= runs; i++)); do
    wait_quiet
    log=$log_dir/run-$i.log
    echo "run.sh: run $i of $runs -> $log" >&2
    "$program" "$@" | tee "$log"
    logs+=("$log")
done

python3 "$here/plot.py" --doc "$root/docs/benchmarks.md" --png "$root/docs/benchmarks-latency.png" \
    --block "${BLOCK:-results}" "${logs[@]}"
echo "run.sh: logs in $log_dir" >&2
