#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Builds the libFuzzer targets with clang in their own build directory and runs each one for
# a fixed number of iterations, starting from the seed corpus in fuzz/corpus/<target>.
# Exits non-zero on a finding (crash, sanitizer report, leak, out-of-memory, timeout) or on
# a regression input in fuzz/regressions/<target> that still fails.
#
# Usage: fuzz/run.sh [runs]             runs per target, default 200000
# Environment:
#   FUZZ_BUILD_DIR   build directory (default: <repo>/build-fuzz)
#   FUZZ_CXX         the clang++ to use (default: clang++)
#   FUZZ_TARGETS     targets to run (default: "resp_decoder node_replies cluster_replies")
#   FUZZ_SEED        libFuzzer -seed (default 1, for repeatable CI runs; 0 picks one)
#   FUZZ_JOBS        build parallelism (default: nproc)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
runs=${1:-200000}
build=${FUZZ_BUILD_DIR:-$repo/build-fuzz}
cxx=${FUZZ_CXX:-clang++}
targets=${FUZZ_TARGETS:-"resp_decoder node_replies cluster_replies"}
seed=${FUZZ_SEED:-1}
jobs=${FUZZ_JOBS:-$(nproc)}

# -O1 with line tables, as libFuzzer's tutorial builds: quicker to compile than
# RelWithDebInfo's -O2 -g, and enough for symbolized stack traces of a crash.
cmake -S "$here" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" >/dev/null
cmake --build "$build" -j "$jobs" --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)

artifacts="$build/artifacts"
mkdir -p "$artifacts"
failed=()
summary=()

for t in $targets; do
    exe="$build/fuzz_$t"
    log="$build/fuzz_$t.log"

    # Inputs that once failed must keep passing.
    regressions=("$here/regressions/$t"/*)
    if [[ -e "${regressions[0]}" ]]; then
        if ! "$exe" -timeout=10 -rss_limit_mb=2048 "${regressions[@]}" >"$log.regressions" 2>&1; then
            echo "== $t: a regression input fails; see $log.regressions" >&2
            tail -n 30 "$log.regressions" >&2
            failed+=("$t (regression)")
            continue
        fi
    fi

    # Fuzz from a fresh copy of the seeds, so that every run starts from the same corpus.
    work="$build/corpus/$t"
    rm -rf "$work"
    mkdir -p "$work"
    status=0
    "$exe" "$work" "$here/corpus/$t" \
        -runs="$runs" -seed="$seed" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -dict="$here/resp.dict" -print_final_stats=1 \
        -artifact_prefix="$artifacts/$t-" >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
    if [[ $status -ne 0 ]]; then
        echo "== $t: FINDING (exit $status); log $log" >&2
        grep -E 'ERROR|invariant|SUMMARY|Test unit written' "$log" | head -n 20 >&2 || true
        failed+=("$t")
        summary+=("$t: FINDING after ${execs:-?} runs (${rate:-?} exec/s); artifacts in $artifacts")
    else
        summary+=("$t: ${execs:-?} runs, ${rate:-?} exec/s, ${cov:-cov ?}, no findings")
    fi
done

printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -ne 0 ]]; then
    echo "fuzzing failed: ${failed[*]}" >&2
    exit 1
fi
