#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Profiles the client side of the uncontended scenario: where the library spends its
# instructions (callgrind) and its CPU time, kernel included (perf, where it works). The raw
# sender of the same commands (scenario server, pipelined RAW_DEPTH deep on one connection per
# node) is profiled the same way, as the yardstick: an operation of it is one command on every
# node, as an acquire or a release is.
#
#   bench/profile.sh BUILD_DIR [CONCURRENCY] [SECONDS] [HELD]
#
# BUILD_DIR should be a RelWithDebInfo build (-O2 -g; add -fno-omit-frame-pointer for perf's
# call graphs). Defaults: 64 coroutines, 3 s, 100000 held guards. Needs valgrind (apt-get install valgrind);
# perf is used when present (apt-get install linux-perf). The callgrind run is ~50 times
# slower than native, so it makes far fewer lock operations than a normal run; the figures
# per operation are what matter. RAW_DEPTH (default 16) is the raw sender's pipeline depth.
# Output: markdown on stdout, raw profiles in OUT_DIR (default
# ${TMPDIR:-/tmp}/redlock-bench-profile).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: bench/profile.sh BUILD_DIR [CONCURRENCY] [SECONDS] [HELD]}
concurrency=${2:-64}
seconds=${3:-3}
held=${4:-100000}
program=$build/bench/redlock_bench
[[ -x $program ]] || { echo "profile.sh: no $program" >&2; exit 2; }
out=${OUT_DIR:-${TMPDIR:-/tmp}/redlock-bench-profile}
mkdir -p "$out"
args=(--scenario uncontended --concurrency "$concurrency" --duration "$seconds" --warmup 0)

raw_depth=${RAW_DEPTH:-16}
rm -f "$out"/callgrind.out* "$out"/callgrind-raw.out*
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind-raw.out" \
    --toggle-collect='bench::raw_throughput*' "$program" --scenario server \
    --depths "$raw_depth" --raw-connections 1 --duration "$seconds" --warmup 0 \
    >"$out/callgrind-raw.log" 2>"$out/callgrind-raw.stderr"
raw_commands=$(sed -n 's/^RESULT .*"measure":"throughput".*"commands":\([0-9]*\).*/\1/p' \
    "$out/callgrind-raw.log")
nodes=$(sed -n 's/^RESULT .*"scenario":"meta".*"nodes":\([0-9]*\).*/\1/p' "$out/callgrind-raw.log")

echo "## callgrind: uncontended, C=$concurrency, $seconds s (instructions of the client only)"
echo
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
    --toggle-collect='*measure_uncontended*' "$program" "${args[@]}" \
    >"$out/callgrind.log" 2>"$out/callgrind.stderr"
cycles=$(sed -n 's/^RESULT .*"scenario":"uncontended".*"cycles":\([0-9]*\).*/\1/p' \
    "$out/callgrind.log")
grep '^uncontended' "$out/callgrind.log" | sed 's/^/    /'
echo
python3 "$here/callgrind_summary.py" "$out/callgrind.out" --ops $((2 * ${cycles:-0})) \
    --against "$out/callgrind-raw.out" --against-ops $((${raw_commands:-0} / ${nodes:-1})) \
    --against-name "The raw sender (depth $raw_depth, one connection per node)"
echo
echo "## callgrind: the raw sender, depth $raw_depth, one connection per node, $seconds s"
echo
grep '^server bound' "$out/callgrind-raw.log" | sed 's/^/    /'
echo
python3 "$here/callgrind_summary.py" "$out/callgrind-raw.out" \
    --ops $((${raw_commands:-0} / ${nodes:-1})) --top 10
echo

if command -v perf >/dev/null && perf record -o /dev/null -e cpu-clock true >/dev/null 2>&1; then
    echo "## perf: uncontended, C=$concurrency, $seconds s, native speed (the client process)"
    echo
    perf record -q -F 2999 -e cpu-clock -g -o "$out/perf.data" -- "$program" "${args[@]}" \
        >"$out/perf.log" 2>"$out/perf.stderr"
    grep '^uncontended' "$out/perf.log" | sed 's/^/    /'
    echo
    perf report -i "$out/perf.data" --no-children --sort comm,dso -g none --stdio \
        >"$out/perf-dso.txt" 2>/dev/null
    perf report -i "$out/perf.data" --comm redlock_bench --no-children --sort dso,sym -g none \
        --percentage relative --stdio >"$out/perf-sym.txt" 2>/dev/null
    echo "| where the client process's CPU time goes | share |"
    echo "|---|---|"
    awk '$2 == "redlock_bench" { sub("%", "", $1); share[$3] += $1; total += $1 }
         END { for (d in share) printf "| %s | %.1f%% |\n", d, 100 * share[d] / total }' \
        "$out/perf-dso.txt" | sort -t'|' -k3 -rn
    echo
    echo "Top symbols of the client process (kernel included):"
    echo
    echo '```'
    grep -v '^#' "$out/perf-sym.txt" | grep -v '^$' | sed -n '1,25p' | cut -c1-150
    echo '```'

    echo
    echo "## perf: held, K=$held guards extended every 10 s, $seconds s hold (the client process)"
    echo
    perf record -q -F 2999 -e cpu-clock -g -o "$out/perf-held.data" -- "$program" \
        --scenario held --held "$held" --duration "$seconds" >"$out/perf-held.log" \
        2>"$out/perf-held.stderr"
    grep '^held' "$out/perf-held.log" | sed 's/^/    /'
    echo
    perf report -i "$out/perf-held.data" --no-children --sort comm,dso -g none --stdio \
        >"$out/perf-held-dso.txt" 2>/dev/null
    perf report -i "$out/perf-held.data" --comm redlock_bench --no-children --sort dso,sym \
        -g none --percentage relative --stdio >"$out/perf-held-sym.txt" 2>/dev/null
    echo "| where the client process's CPU time goes (whole run: acquire, hold, release) | share |"
    echo "|---|---|"
    awk '$2 == "redlock_bench" { sub("%", "", $1); share[$3] += $1; total += $1 }
         END { for (d in share) printf "| %s | %.1f%% |\n", d, 100 * share[d] / total }' \
        "$out/perf-held-dso.txt" | sort -t'|' -k3 -rn
    echo
    echo '```'
    grep -v '^#' "$out/perf-held-sym.txt" | grep -v '^$' | sed -n '1,15p' | cut -c1-150
    echo '```'
else
    echo "(perf not available: skipped)"
fi
