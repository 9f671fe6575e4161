#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Tests examples/scheduler: three instances, their leader killed, then stopped.
#
#   test_scheduler.sh [PATH/TO/scheduler]     (default: build/examples/scheduler)
#
# Starts 4 redis-servers on free loopback ports (the first is the jobs' resource, the others
# the election's nodes) and instances A, B and C, then checks:
#   1. one instance leads and runs jobs, and every instance names it as the leader;
#   2. after the leader is killed (SIGKILL), another leads within its lock's expiry (2 s), a
#      refresh period (the successor's wait for its turn, 0.5 s) and 1.5 s of slack for a loaded
#      machine, with a greater term, and the last instance names it;
#   3. the jobs go on from where the killed leader left them: no job number twice, and (once
#      all have stopped) the resource's count is the last job's number;
#   4. the new leader stopped by SIGTERM resigns: the last instance leads within 2 s (it takes
#      milliseconds: the resignation names it, and it attempts at once), and
#      exits 0 on SIGTERM too; no key is left on the nodes but counters.
# Everything started here is stopped on exit. Needs redis-server and redis-cli.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scheduler=${1:-$here/../build/examples/scheduler}
if [ ! -x "$scheduler" ]; then
  echo "test_scheduler: no scheduler at '$scheduler' (pass its path)" >&2
  exit 2
fi

# shellcheck source=scripts/redis-nodes.sh
source "$here/../scripts/redis-nodes.sh"
# shellcheck source=examples/test_support.sh
source "$here/test_support.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/scheduler-test-XXXXXX")
declare -A pid_of=()
cleanup() {
  local pid
  for pid in "${pid_of[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  redis_nodes_stop
  rm -rf "$work"
}
cleanup_on_exit cleanup

# Waits (at most $3 ms) until the log of instance $1 has a line matching $2.
wait_line() {
  local deadline=$(($(now_ms) + $3))
  while (($(now_ms) < deadline)); do
    grep -q -e "$2" "$work/$1.out" && return 0
    sleep 0.02
  done
  return 1
}
# The first of the given instances whose log has a "leading" line (nothing when none).
leading_in() {
  local id
  for id in "$@"; do
    grep -q "^$id: leading, term " "$work/$id.out" && echo "$id" && return 0
  done
  return 0
}
term_of() { sed -n "s/^$1: leading, term \([0-9]*\)$/\1/p" "$work/$1.out" | tail -n 1; }
# The last view that instance $1 printed.
last_view() { grep -E "^$1: (leader is|no leader)" "$work/$1.out" | tail -n 1 | sed "s/^$1: //"; }
# Waits (at most $3 ms) until instance $1's last view is $2.
wait_view() {
  local deadline=$(($(now_ms) + $3))
  while (($(now_ms) < deadline)); do
    [ "$(last_view "$1")" = "$2" ] && return 0
    sleep 0.02
  done
  return 1
}
start() {
  : >"$work/$1.out"
  "$scheduler" "$1" "${REDIS_NODE_URLS[@]}" >"$work/$1.out" 2>"$work/$1.err" &
  pid_of[$1]=$!
}
show_logs() {
  local id
  for id in "$@"; do
    echo "---- $id"
    cat "$work/$id.out" "$work/$id.err"
  done
}

redis_nodes_start 4
resource_port=${REDIS_NODE_PORTS[0]}

# 1. A campaigns first, so it leads; B and C wait in line behind it.
start A
wait_line A '^A: leading, term ' 5000 || fail "A did not lead within 5 s"
start B
start C
first=A
first_term=$(term_of A)
if wait_line A '^A: job 3, term ' 3000 && wait_view B "leader is A, term $first_term" 3000 &&
  wait_view C "leader is A, term $first_term" 3000; then
  pass "A leads (term $first_term) and runs jobs; B and C name it"
else
  fail "the first leader: A's view '$(last_view A)', B's '$(last_view B)', C's '$(last_view C)'"
  show_logs A B C
fi

# 2. The leader killed: its lock expires within 2 s, then the next in line leads at its next
# look (a refresh period, 0.5 s, at most).
kill -KILL "${pid_of[$first]}"
wait "${pid_of[$first]}" 2>/dev/null || true
unset 'pid_of[A]'
killed_at=$(now_ms)
jobs_before=$(grep -c '^A: job ' "$work/A.out" || true)
deadline=$((killed_at + 4000))
second=
while [ -z "$second" ] && (($(now_ms) < deadline)); do
  second=$(leading_in B C)
  sleep 0.02
done
took=$(($(now_ms) - killed_at))
if [ -n "$second" ]; then
  third=$([ "$second" = B ] && echo C || echo B)
  second_term=$(term_of "$second")
  if ((second_term > first_term)) &&
    wait_view "$third" "leader is $second, term $second_term" 2500; then
    pass "$second leads $took ms after A was killed (term $second_term > $first_term); $third names it"
  else
    fail "after the kill: $second leads with term $second_term; $third's view: '$(last_view "$third")'"
  fi
else
  fail "nobody led within 4 s of A's kill"
  show_logs B C
  exit 1
fi

# 3. The jobs go on where A left them (checked once every instance has stopped, below).
wait_line "$second" "^$second: job [0-9]*, term $second_term\$" 2000 || fail "$second ran no job"

# 4. The second stopped: it resigns, the third leads at once.
kill -TERM "${pid_of[$second]}"
stopped_at=$(now_ms)
status=0
wait "${pid_of[$second]}" || status=$?
unset "pid_of[$second]"
if [ "$status" = 0 ] && wait_line "$third" "^$third: leading, term " 2000; then
  pass "$second exits 0 on SIGTERM and $third leads $(($(now_ms) - stopped_at)) ms later"
else
  fail "$second exited $status; $third's log: $(tail -n 3 "$work/$third.out" | tr '\n' '|')"
fi
kill -TERM "${pid_of[$third]}"
status=0
wait "${pid_of[$third]}" || status=$?
unset "pid_of[$third]"
[ "$status" = 0 ] || fail "$third exited $status on SIGTERM"
# Every job was counted once: no number twice, at most the one A was killed after counting
# missing from the logs, and the resource's count is the last job's.
jobs=$(cat "$work/A.out" "$work/B.out" "$work/C.out" | sed -n 's/^.: job \([0-9]*\), term .*/\1/p')
twice=$(echo "$jobs" | sort -n | uniq -d | tr '\n' ' ')
last_job=$(echo "$jobs" | sort -n | tail -n 1)
distinct=$(echo "$jobs" | sort -nu | wc -l)
stored=$(redis-cli -p "$resource_port" --raw HGET scheduler:jobs-done value)
if [ -z "$twice" ] && ((jobs_before >= 3 && distinct >= last_job - 1)) && [ "$stored" = "$last_job" ]; then
  pass "jobs 1 to $last_job ($distinct logged), none twice; the resource counts $stored"
else
  fail "jobs: twice '$twice', A ran $jobs_before, $distinct logged, last $last_job, the resource counts '$stored'"
fi
leftover=
for port in "${REDIS_NODE_PORTS[@]:1}"; do
  keys=$(redis-cli -p "$port" --raw KEYS '*' | grep -v -E '^redlock:(fence|ticket):' || true)
  [ -n "$keys" ] && leftover+="$port: $(echo "$keys" | tr '\n' ' ') "
done
if [ -z "$leftover" ]; then
  pass "no key left on the nodes but counters"
else
  fail "keys left: $leftover"
fi

if [ "$failures" -gt 0 ]; then
  show_logs A B C
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
