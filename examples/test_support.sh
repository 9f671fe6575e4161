# SPDX-License-Identifier: BSL-1.0
# Sourced by the examples' test scripts: PASS and FAIL lines with a count of the failures, the
# time in milliseconds, and a clean-up run on exit, also when a signal ends the script.

failures=0
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# cleanup_on_exit FUNCTION: runs FUNCTION when the script exits, by a signal too.
cleanup_on_exit() {
  trap "$1" EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
