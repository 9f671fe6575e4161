#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Set-up, then every test: the models; the normal build with its tests and the network
# partitions; the Release build and the packaging checks; the same suite and the fault-injection
# suite built by clang under AddressSanitizer+UndefinedBehaviorSanitizer, with clang-tidy; the
# threaded tests under ThreadSanitizer; the fuzzers.
# The suite starts and stops its own redis-server processes on free loopback ports.
# Every build here treats warnings as errors (REDLOCK_WERROR, off for users' builds).
set -euo pipefail
cd "$(dirname "$0")/.."

# Installs those of the given Debian packages that are missing (with sudo when not root).
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# A stage's heading, with the time since the script began: where CI's time goes.
stage() {
  echo "== $* (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"
}

# Every build compiles through ccache when it is installed (the script does not install it):
# a later run on the same machine compiles only what changed. Paths count from the checkout,
# so that two checkouts of the same commit share what they compiled.
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi

# The docs test builds the API reference with Doxygen.
install_missing doxygen clang-format
# One .clang-format for every C++ file of the project; first, since it takes seconds.
stage "clang-format"
git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run -Werror
stage "models"
scripts/check-models.sh
stage "build (RelWithDebInfo): every target"
# Every target, at -O2 as RelWithDebInfo builds, but with line tables only (-g1): nothing here
# reads variables' debug info, g++'s code and warnings do not depend on it, and full -g makes
# the compiler a third slower on the test files.
scripts/setup.sh build -DREDLOCK_BUILD_TESTS=ON -DREDLOCK_BUILD_EXAMPLES=ON -DREDLOCK_WERROR=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
stage "tests (RelWithDebInfo)"
# Each fault suite runs in one build only: each takes close to three minutes (RUN_SERIAL) and
# its scenarios are the same in every build. The network partitions (fault_partition_tests)
# run here, the other faults (fault_tests) in the ASan+UBSan stage below.
ctest --test-dir build --output-on-failure -j 2 -E '^fault_tests$'

# What users build: -O3 warns where -O2 does not. The library (shared here; the static one is
# what the test build above packages) and the tool, without the tests and the examples (both
# other builds compile those); then the shared library's install, pkg-config file and Debian
# packages, each with the consumer program.
stage "Release build, shared library: library, tool; packaging checks"
scripts/setup.sh build-release -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DREDLOCK_WERROR=ON \
  -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_BUILD_EXAMPLES=OFF
version=$(sed -n 's/^project(redlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
for way in find_package pkg-config deb; do
  tests/packaging/consume.sh "$way" "$PWD" build-release "$version"
done

if [ "${REDLOCK_SKIP_SANITIZERS:-0}" != 1 ]; then
  # One build serves both the sanitizers and the second compiler: clang's warnings (as errors),
  # clang-tidy (which reads its compile commands) and every test under ASan+UBSan. The headers'
  # self-containment is checked by the first build only.
  stage "clang with ASan+UBSan: build and tests, clang-tidy on src/"
  install_missing clang clang-tidy libclang-rt-14-dev
  CXX=clang++ scripts/setup.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=address,undefined \
    -DREDLOCK_BUILD_TESTS=ON -DREDLOCK_BUILD_EXAMPLES=ON -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_WERROR=ON \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DREDLOCK_CHECK_HEADERS=OFF
  # clang-tidy (the files it has not passed unchanged before) runs beside the tests, at a lower
  # priority: they spend most of their time waiting for servers and timers.
  stage "tests under ASan+UBSan (clang), clang-tidy on src/ beside them"
  nice -n 10 scripts/tidy.py build-asan --jobs "$(nproc)" >build-asan/tidy.log 2>&1 &
  tidy_pid=$!
  trap 'kill "$tidy_pid" 2>/dev/null || true' EXIT
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j 2 -LE packaging -E '^fault_partition_tests$'
  stage "clang-tidy on src/: the result"
  tidy_status=0
  wait "$tidy_pid" || tidy_status=$?
  trap - EXIT
  cat build-asan/tidy.log
  [ "$tidy_status" = 0 ]

  stage "threaded tests under TSan"
  # Only the threaded tests run under TSan, so only they are built.
  scripts/setup.sh --target threaded_tests build-tsan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=thread \
    -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_WERROR=ON
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -L threaded

  stage "fuzzing: each libFuzzer target for a fixed number of runs, regressions first"
  FUZZ_BUILD_DIR=build-fuzz fuzz/run.sh "${REDLOCK_FUZZ_RUNS:-50000}"
fi
stage "done"
