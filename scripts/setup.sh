#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs what is missing (Debian 12 packages), then configures and builds redlock.
# Usage: scripts/setup.sh [--demo] [--target NAME]... [build-dir] [extra cmake args...]
#   (no options)   every package the tests need (prometheus-cpp-dev for redlock::prometheus),
#                  and every target the configuration has
#   --demo         only the packages the library, the examples and their redis-servers need
#                  (no hiredis, Boost.Test, faketime, curl...), installed without recommends
#   --target NAME  build NAME only (repeatable). The build is then quiet: one progress line,
#                  the output kept in <build-dir>/configure.log and build.log, and shown when
#                  a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."

demo_packages=(build-essential cmake libboost1.81-dev libssl-dev redis-server)
packages=("${demo_packages[@]}" pkg-config python3 libboost-test1.81-dev libhiredis-dev openssl
  faketime curl iproute2 nftables prometheus-cpp-dev)
apt_options=()
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --demo)
      packages=("${demo_packages[@]}")
      apt_options=(--no-install-recommends)
      shift
      ;;
    --target)
      targets+=("${2:?--target needs a target name}")
      shift 2
      ;;
    *) break ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${apt_options[@]}" \
    "${missing[@]}" >/dev/null
fi

build_dir=${1:-build}
shift || true
if [ ${#targets[@]} -eq 0 ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$build_dir" -j "$(nproc)"
  exit 0
fi

# The chosen targets, quietly. compile_commands.json holds a command per file to compile, whose
# object file is under CMakeFiles/<target>.dir/: that tells how many files each target compiles.
mkdir -p "$build_dir"
log=$build_dir/configure.log
if ! cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  "$@" >"$log" 2>&1; then
  cat "$log" >&2
  echo "== configuring $build_dir failed (output above, and in $log)" >&2
  exit 1
fi
log=$build_dir/build.log
files=0
# Every target here builds on the library: count its files too, once.
counted=("${targets[@]}")
[[ " ${targets[*]} " == *" redlock "* ]] || counted+=(redlock)
for t in "${counted[@]}"; do
  n=$(grep -c -e "\"command\": .* -o [^ ]*CMakeFiles/$t\.dir/" "$build_dir/compile_commands.json" || true)
  files=$((files + n))
done
echo "== building ${targets[*]}: $files files to compile, $(nproc) at a time (output in $log)"
if ! cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}" >"$log" 2>&1; then
  # The compiler's and make's messages, without the progress lines.
  grep -v -e '^\[ *[0-9]*%\]' -e '^\[[0-9]*/[0-9]*\]' "$log" >&2 || true
  echo "== the build failed (errors above, the whole output in $log)" >&2
  exit 1
fi
