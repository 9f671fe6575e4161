#!/usr/bin/env bash
# Builds the consumer project against redlock one way (find_package | add_subdirectory |
# fetchcontent) in a temp dir and runs it. For find_package, redlock is first installed from
# BUILD_DIR into a temp prefix, and its pkg-config file is checked too.
# Usage: consume.sh WAY SOURCE_DIR BUILD_DIR
set -euo pipefail
way=$1 source_dir=$2 build_dir=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-consume-XXXXXX")
trap 'rm -rf "$work"' EXIT

args=(-DREDLOCK_CONSUME="$way" -DREDLOCK_SOURCE_DIR="$source_dir" -DCMAKE_BUILD_TYPE=Release)
if [ "$way" = find_package ]; then
  cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
  args+=(-DCMAKE_PREFIX_PATH="$work/prefix")
  # The pkg-config file must describe a usable library too.
  PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig" \
    pkg-config --cflags --libs redlock | grep -q -- "-lredlock"
fi
cmake -S "$source_dir/tests/packaging/consumer" -B "$work/build" "${args[@]}" >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
# A port where nothing listens: the acquire must fail cleanly with a report.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/build/consumer" "redis://127.0.0.1:$port"
echo "consumed through $way: OK"
