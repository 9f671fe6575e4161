#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Checks the generated man page against the tool's --help texts (the ctest "cli_man", label
# "tools"): every heading of `redlock --help`, `redlock run --help`, `redlock elect --help`
# and `redlock status --help` is a section of the page and every line of their text is a line
# of it. With groff installed, the page must also format without warnings and fit 80 columns.
#
#   tools/test_man.sh path/to/redlock path/to/redlock.1
set -euo pipefail

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -f "$2" ]; then
  echo "usage: $0 path/to/redlock path/to/redlock.1" >&2
  exit 2
fi
bin=$1 page=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-man-XXXXXX")
trap 'rm -rf "$work"' EXIT

failures=0
fail() {
  echo "FAIL - $*" >&2
  failures=$((failures + 1))
}

# The page's text lines, unescaped and without their indentation.
grep -v '^\.' "$page" | sed -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\e/\\/g' -e 's/^ *//' \
  >"$work/text"

for cmd in "" run elect status; do
  name="redlock ${cmd:+$cmd }--help"
  # shellcheck disable=SC2086  # an empty $cmd is no argument
  "$bin" $cmd --help >"$work/help"
  headings=0 lines=0
  while IFS= read -r line; do
    if [[ $line =~ ^[A-Z][A-Z\ ]*[A-Z]$ ]]; then
      headings=$((headings + 1))
      [ "$line" = NAME ] && continue
      grep -Eqx "\.S[HS] \"?$line\"?" "$page" || fail "$name: no section $line in the page"
    elif [ -n "$line" ]; then
      lines=$((lines + 1))
      trimmed=${line#"${line%%[! ]*}"}
      grep -Fqx -- "$trimmed" "$work/text" || fail "$name: the page lacks the line '$line'"
    fi
  done <"$work/help"
  if [ $headings -lt 3 ] || [ $lines -lt 5 ]; then
    fail "$name: too short ($headings headings, $lines lines)"
  fi
  echo "ok - $name: $headings headings and $lines lines are in the page"
done

if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$page" 2>"$work/warnings"
  if [ -s "$work/warnings" ]; then
    fail "groff warns about the page: $(head -5 "$work/warnings")"
  fi
  groff -man -Tutf8 -rLL=80n -P-cbou "$page" 2>/dev/null >"$work/rendered"
  long=$(awk 'length($0) > 80' "$work/rendered" | head -3)
  [ -z "$long" ] || fail "lines wider than 80 columns in the formatted page: $long"
  grep -q "^NAME" "$work/rendered" || fail "the formatted page has no NAME section"
  echo "ok - groff formats the page without warnings within 80 columns"
else
  echo "skip - groff is not installed: the page's formatting is not checked"
fi

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
