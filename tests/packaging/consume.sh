#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Builds the consumer program (tests/packaging/consumer) against redlock one WAY, in a temp
# dir, and runs it against a redis-server of its own (examples/run_example.sh): it must link,
# report the expected version and lock.
#
#   consume.sh WAY SOURCE_DIR BUILD_DIR VERSION
#
# WAY is one of
#   find_package      install BUILD_DIR into a prefix, move the prefix elsewhere (an install
#                     must not depend on where it was made), CMake's find_package(redlock)
#   pkg-config        the same install and move, then the compiler alone with
#                     $(pkg-config --cflags --libs redlock), as docs/installation.md shows
#   add_subdirectory  redlock's source tree inside the consumer's build
#   fetchcontent      FetchContent from SOURCE_DIR (no network)
#   deb               cpack's Debian packages of BUILD_DIR, checked (names, dependencies,
#                     contents), unpacked with dpkg-deb -x, then find_package against them
# Where BUILD_DIR built redlock::prometheus (prometheus-cpp was installed), every way but
# pkg-config (which has no file for it) also builds and runs the consumer of that component,
# tests/packaging/consumer/prometheus_main.cpp.
# Environment: REDLOCK_CONSUMER_CXX, the compiler (default c++); REDLOCK_CONSUMER_LAUNCHER,
# a compiler launcher such as ccache (default none).
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 find_package|pkg-config|add_subdirectory|fetchcontent|deb SOURCE_DIR BUILD_DIR VERSION" >&2
  exit 2
fi
way=$1 source_dir=$2 build_dir=$3 version=$4
cxx=${REDLOCK_CONSUMER_CXX:-c++}
consumer_source=$source_dir/tests/packaging/consumer
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-consume-XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake_args=(-DCMAKE_CXX_COMPILER="$cxx")
if [ -n "${REDLOCK_CONSUMER_LAUNCHER:-}" ]; then
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$REDLOCK_CONSUMER_LAUNCHER")
fi

# Runs a command with its output in a log, shown only when it fails.
logged() {
  local log=$work/$1.log
  shift
  if ! "$@" >"$log" 2>&1; then
    echo "FAIL: $*" >&2
    cat "$log" >&2
    exit 1
  fi
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

install_and_move() {
  logged install cmake --install "$build_dir" --prefix "$work/staged"
  mv "$work/staged" "$work/prefix"
}

# The directory holding redlock.pc under $1.
pc_dir() {
  local pc
  pc=$(find "$1" -name redlock.pc | head -n 1)
  [ -n "$pc" ] || fail "no redlock.pc under $1"
  dirname "$pc"
}

# The component "prometheus" is consumed where the build made it.
prometheus=0
if compgen -G "$build_dir/libredlock_prometheus.*" >/dev/null; then
  prometheus=1
  cmake_args+=(-DREDLOCK_CONSUME_PROMETHEUS=ON)
fi
prometheus_consumer=

cmake_consumer() {
  local how=$1
  shift
  logged configure cmake -S "$consumer_source" -B "$work/build" -DREDLOCK_CONSUME="$how" \
    "${cmake_args[@]}" "$@"
  logged build cmake --build "$work/build" -j 2
  consumer=$work/build/consumer
  if [ $prometheus = 1 ]; then
    prometheus_consumer=$work/build/prometheus_consumer
  fi
}

case $way in
  find_package)
    install_and_move
    cmake_consumer find_package -DCMAKE_PREFIX_PATH="$work/prefix"
    ;;
  pkg-config)
    install_and_move
    export PKG_CONFIG_PATH
    PKG_CONFIG_PATH=$(pc_dir "$work/prefix")
    flags=$(pkg-config --cflags --libs redlock)
    echo "pkg-config --cflags --libs redlock: $flags"
    # The run path matters for a shared library only, as docs/installation.md says.
    # shellcheck disable=SC2086  # the flags are words, as in a Makefile
    logged build "$cxx" "$consumer_source/main.cpp" $flags \
      -Wl,-rpath,"$(pkg-config --variable=libdir redlock)" -o "$work/consumer"
    consumer=$work/consumer
    ;;
  add_subdirectory)
    # Up to the generated build only: it compiles what FetchContent's build below compiles,
    # since FetchContent adds the same directory the same way. Generating checks what is
    # particular to this way: the library's CMake code as a subdirectory, and the target
    # `redlock::redlock` that the consumer links.
    logged configure cmake -S "$consumer_source" -B "$work/build" -DREDLOCK_CONSUME="$way" \
      -DREDLOCK_SOURCE_DIR="$source_dir" "${cmake_args[@]}"
    # The consumer's link step depends on the library that the subdirectory builds.
    grep -q '^consumer: redlock/libredlock\.' "$work/build/CMakeFiles/consumer.dir/build.make" ||
      fail "the consumer's build does not link redlock/libredlock"
    if [ $prometheus = 1 ]; then
      grep -q '^prometheus_consumer: redlock/libredlock_prometheus\.' \
        "$work/build/CMakeFiles/prometheus_consumer.dir/build.make" ||
        fail "the prometheus consumer's build does not link redlock/libredlock_prometheus"
    fi
    echo "consumed through $way: generated (FetchContent builds and runs the same)"
    exit 0
    ;;
  fetchcontent)
    cmake_consumer "$way" -DREDLOCK_SOURCE_DIR="$source_dir"
    ;;
  deb)
    logged cpack cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/debs"
    shopt -s nullglob
    debs=("$work"/debs/*.deb)
    [ ${#debs[@]} -gt 0 ] || fail "cpack made no .deb: $(cat "$work/cpack.log")"
    declare -A depends=()
    for deb in "${debs[@]}"; do
      package=$(dpkg-deb -f "$deb" Package)
      depends[$package]=$(dpkg-deb -f "$deb" Depends)
      [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "$package: version is not $version"
      echo "$package: Depends: ${depends[$package]}"
      dpkg-deb -x "$deb" "$work/root"
    done
    requires() { # PACKAGE DEPENDENCY...: PACKAGE's Depends names each DEPENDENCY
      local package=$1 dep
      shift
      [ -n "${depends[$package]+set}" ] || fail "no $package package"
      for dep in "$@"; do
        [[ ", ${depends[$package]}," =~ ,\ ${dep}[\ ,] ]] || fail "$package does not depend on $dep"
      done
    }
    # The shared library's package, libredlock<SOVERSION>, when there is one.
    shared=$(printf '%s\n' "${!depends[@]}" | grep -E '^libredlock[0-9]' || true)
    if [ -n "$shared" ]; then
      requires "$shared" libc6 libssl3
      requires libredlock-dev "$shared" libboost1.81-dev
      [ -L "$work/root/usr/lib/libredlock.so" ] || fail "libredlock-dev has no libredlock.so link"
    else
      requires libredlock-dev libboost1.81-dev libssl-dev
      [ -f "$work/root/usr/lib/libredlock.a" ] || fail "libredlock-dev has no libredlock.a"
    fi
    for package in "${!depends[@]}"; do
      # RESP is read by the library's own decoder.
      [[ ${depends[$package]} != *hiredis* ]] || fail "$package depends on hiredis"
    done
    if [ -n "${depends[redlock]+set}" ]; then
      # Linked to the shared library, the tool reaches OpenSSL only through it.
      if [ -n "$shared" ]; then
        requires redlock libc6 "$shared"
      else
        requires redlock libc6 libssl3
      fi
      [ "$("$work/root/usr/bin/redlock" --version)" = "redlock $version" ] ||
        fail "the packaged redlock does not report version $version"
      [ -s "$work/root/usr/share/man/man1/redlock.1" ] || fail "the redlock package has no man page"
      [ -s "$work/root/usr/share/doc/redlock/LICENSE" ] || fail "the redlock package has no LICENSE"
    fi
    [ -s "$work/root/usr/share/doc/libredlock-dev/LICENSE" ] || fail "libredlock-dev has no LICENSE"
    if [ $prometheus = 1 ]; then
      requires libredlock-prometheus-dev libredlock-dev prometheus-cpp-dev
      [ -s "$work/root/usr/include/redlock/prometheus.hpp" ] ||
        fail "libredlock-prometheus-dev has no redlock/prometheus.hpp"
      compgen -G "$work/root/usr/lib/libredlock_prometheus.*" >/dev/null ||
        fail "libredlock-prometheus-dev has no libredlock_prometheus"
    fi
    # The core package never carries or needs the Prometheus add-on.
    [[ ${depends[libredlock-dev]} != *prometheus* ]] || fail "libredlock-dev depends on prometheus"
    # The pkg-config file points into wherever the package was unpacked.
    pkg_flags=$(PKG_CONFIG_PATH=$(pc_dir "$work/root") pkg-config --cflags --libs redlock)
    [[ $pkg_flags == *"-I$work/root/usr/"* ]] || fail "pkg-config gives $pkg_flags"
    cmake_consumer find_package -DCMAKE_PREFIX_PATH="$work/root/usr"
    ;;
  *)
    fail "unknown way '$way'"
    ;;
esac

"$source_dir/examples/run_example.sh" 1 "$consumer" "$version" @URLS@
if [ -n "$prometheus_consumer" ]; then
  "$source_dir/examples/run_example.sh" 1 "$prometheus_consumer" @URLS@
fi
echo "consumed through $way: OK"
