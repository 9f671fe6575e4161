#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Tests examples/http_service with curl against three redis-servers of its own.
#
#   test_http_service.sh [PATH/TO/http_service]     (default: $HTTP_SERVICE, else build/examples/)
#
# Starts 3 redis-servers on free loopback ports (scripts/redis-nodes.sh) and the service with
# --request-timeout 1s, then checks:
#   1. GET /healthz answers 200;
#   2. a reserve answers 200 with the JSON fields;
#   3. two reserves of one resource (work_ms=500) are serialized (the second waited >= 400 ms),
#      two of different resources run in parallel (both done in < 900 ms);
#   4. a request for a resource held by a long request (work_ms=3000) gets 503 "timed out
#      waiting for the lock" after the 1 s deadline (in < 1.5 s);
#   5. a client that gives up (curl --max-time 0.5) while waiting for a held lock cancels the
#      acquire: the log says so, it never got the lock, and once the holder is done no key is
#      left; a client that gives up during the work gets its lock released at once;
#   6. GET /metrics answers the Prometheus text format with the lock events of the requests
#      above (7 mutex acquires granted, 2 abandoned, 7 holds, the leadership's acquire) and
#      every node's request counter, and no lock name in any label;
#   7. GET /leader names the first instance; a second instance names the first too;
#   8. SIGTERM with requests in flight: they get 503 "shutting down", the service exits 0 within
#      2 s; the second instance leads at once, with a greater term; once it is stopped too, no
#      key is left on any node but the counters of fencing tokens and queue tickets.
# Everything started here is stopped on exit. Needs curl, redis-server and redis-cli.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
service=${1:-${HTTP_SERVICE:-$here/../build/examples/http_service}}
if [ ! -x "$service" ]; then
  echo "test_http_service: no http_service at '$service' (pass its path)" >&2
  exit 2
fi
for tool in curl redis-cli redis-server; do
  command -v "$tool" >/dev/null || {
    echo "test_http_service: $tool not found (scripts/setup.sh installs it)" >&2
    exit 1
  }
done

# shellcheck source=scripts/redis-nodes.sh
source "$here/../scripts/redis-nodes.sh"
# shellcheck source=examples/test_support.sh
source "$here/test_support.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/http-service-test-XXXXXX")
service_pid=
background=()
cleanup() {
  local pid
  for pid in "${background[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  if [ -n "$service_pid" ] && kill -0 "$service_pid" 2>/dev/null; then
    kill -KILL "$service_pid" 2>/dev/null || true
    wait "$service_pid" 2>/dev/null || true
  fi
  redis_nodes_stop
  rm -rf "$work"
}
cleanup_on_exit cleanup
json_number() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" "$2"; }

# reserve RESOURCE WORK_MS OUT: POST /reserve/RESOURCE?work_ms=WORK_MS; the body goes to OUT,
# "status total-seconds" to OUT.meta.
reserve() {
  curl -s -X POST -o "$3" -w '%{http_code} %{time_total}\n' --max-time 10 \
    "$base/reserve/$1?work_ms=$2" >"$3.meta" || true
}
start_reserve() {  # the same in the background
  reserve "$@" &
  background+=($!)
}
status_of() { cut -d' ' -f1 "$1.meta"; }
time_of() { cut -d' ' -f2 "$1.meta"; }

# Keys matching $1 on every node, one "port: keys" line per node with keys; empty when none.
keys_on_nodes() {
  local port keys
  for port in "${REDIS_NODE_PORTS[@]}"; do
    keys=$(redis-cli -h 127.0.0.1 -p "$port" --raw KEYS "$1" | tr '\n' ' ')
    [ -n "${keys// /}" ] && echo "$port: $keys"
  done
  return 0
}
# Waits (at most $2 s) until `keys_on_nodes $1` is non-empty (want=some) or empty (want=none).
wait_keys() {
  local pattern=$1 limit=$2 want=$3 deadline
  deadline=$(($(now_ms) + limit * 1000))
  while (($(now_ms) < deadline)); do
    if [ -n "$(keys_on_nodes "$pattern")" ]; then
      [ "$want" = some ] && return 0
    else
      [ "$want" = none ] && return 0
    fi
    sleep 0.02
  done
  return 1
}
# Waits (at most $2 s) until an acquire of key $1 is waiting: it listens on the key's release
# channel on some node.
wait_waiter() {
  local deadline=$(($(now_ms) + $2 * 1000)) port n
  while (($(now_ms) < deadline)); do
    for port in "${REDIS_NODE_PORTS[@]}"; do
      n=$(redis-cli -h 127.0.0.1 -p "$port" pubsub numsub "redlock:released:$1" | tr -d '\r' | sed -n 2p)
      [ "${n:-0}" -gt 0 ] && return 0
    done
    sleep 0.02
  done
  return 1
}
# Waits (at most $2 s) for a line matching $1 in the service's log.
wait_log() {
  local deadline=$(($(now_ms) + $2 * 1000))
  while (($(now_ms) < deadline)); do
    grep -q -e "$1" "$work/service.err" && return 0
    sleep 0.02
  done
  return 1
}

redis_nodes_start 3
nodes=$(IFS=,; echo "${REDIS_NODE_URLS[*]}")

# start_service NAME: starts an instance whose output goes to $work/NAME.out and .err, waits for
# its port, and sets started_pid and started_port.
start_service() {
  # Created here: the background shell opens them only when it gets to run, maybe after the
  # first look below.
  : >"$work/$1.out"
  : >"$work/$1.err"
  "$service" --listen 127.0.0.1:0 --nodes "$nodes" --request-timeout 1s \
    >"$work/$1.out" 2>"$work/$1.err" &
  started_pid=$!
  started_port=
  for _ in $(seq 100); do  # at most 10 s
    started_port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$work/$1.out")
    [ -n "$started_port" ] && break
    kill -0 "$started_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$started_port" ]; then
    echo "FAIL: the instance $1 did not print 'listening on'; its stderr:"
    cat "$work/$1.err"
    exit 1
  fi
}
# stop_service PID: SIGTERM, then waits at most 4 s for it to exit (a hang is reported, not
# waited out); sets stop_status (empty while it runs) and stop_ms.
stop_service() {
  local t0
  t0=$(now_ms)
  kill -TERM "$1"
  stop_status=
  for _ in $(seq 80); do
    if ! kill -0 "$1" 2>/dev/null; then
      stop_status=0
      wait "$1" || stop_status=$?
      break
    fi
    sleep 0.05
  done
  stop_ms=$(($(now_ms) - t0))
}
# get_leader PORT OUT: GET /leader of the instance on PORT; the body goes to OUT, the status to
# OUT.meta.
get_leader() {
  curl -s -o "$2" -w '%{http_code}\n' --max-time 5 "http://127.0.0.1:$1/leader" >"$2.meta" || true
}
# wait_leader PORT OUT WANT SECONDS: until /leader on PORT names WANT (HOST:PORT), at most
# SECONDS s.
wait_leader() {
  local deadline=$(($(now_ms) + $4 * 1000))
  while (($(now_ms) < deadline)); do
    get_leader "$1" "$2"
    grep -q "\"leader\":\"$3\"" "$2" && return 0
    sleep 0.05
  done
  return 1
}
# metric NAME{LABELS} FILE: the value of one series in a scrape (empty when absent).
metric() { awk -v series="$1" '$1 == series { print $2 }' "$2"; }

start_service service
service_pid=$started_pid
port=$started_port
base=http://127.0.0.1:$port
echo "service on port $port, redis on ports ${REDIS_NODE_PORTS[*]}"

# 1. health
code=$(curl -s -o "$work/health" -w '%{http_code}' --max-time 5 "$base/healthz" || true)
if [ "$code" = 200 ] && grep -q '"status":"ok"' "$work/health"; then
  pass "GET /healthz -> 200"
else
  fail "GET /healthz -> '$code' $(cat "$work/health" 2>/dev/null)"
fi

# 2. one reserve
reserve single 50 "$work/one"
if [ "$(status_of "$work/one")" = 200 ] &&
  grep -Eq '^\{"resource":"single","holder":"[^"]+","waited_ms":[0-9]+,"worked_ms":[0-9]+\}$' "$work/one" &&
  (($(json_number worked_ms "$work/one") >= 50)); then
  pass "POST /reserve/single -> 200 $(cat "$work/one")"
else
  fail "POST /reserve/single -> $(status_of "$work/one") $(cat "$work/one")"
fi

# 3a. same resource: serialized
start_reserve same 500 "$work/same1"
start_reserve same 500 "$work/same2"
wait "${background[@]}"
background=()
w1=$(json_number waited_ms "$work/same1")
w2=$(json_number waited_ms "$work/same2")
h1=$(sed -n 's/.*"holder":"\([^"]*\)".*/\1/p' "$work/same1")
h2=$(sed -n 's/.*"holder":"\([^"]*\)".*/\1/p' "$work/same2")
later=$((${w1:-0} > ${w2:-0} ? ${w1:-0} : ${w2:-0}))
if [ "$(status_of "$work/same1")" = 200 ] && [ "$(status_of "$work/same2")" = 200 ] &&
  [ "$h1" != "$h2" ] && ((later >= 400)); then
  pass "two reserves of one resource serialized (waited ${w1} and ${w2} ms)"
else
  fail "same resource: $(status_of "$work/same1") $(cat "$work/same1") / $(status_of "$work/same2") $(cat "$work/same2")"
fi

# 3b. different resources: parallel
t0=$(now_ms)
start_reserve left 500 "$work/left"
start_reserve right 500 "$work/right"
wait "${background[@]}"
background=()
elapsed=$(($(now_ms) - t0))
if [ "$(status_of "$work/left")" = 200 ] && [ "$(status_of "$work/right")" = 200 ] &&
  ((elapsed < 900)); then
  pass "two reserves of different resources in parallel ($elapsed ms for both)"
else
  fail "different resources: $elapsed ms, $(status_of "$work/left") $(cat "$work/left") / $(status_of "$work/right") $(cat "$work/right")"
fi

# 4. deadline: X is held for 3 s; a second request gives up after the 1 s request timeout.
start_reserve X 3000 "$work/holder"
holder_pid=$!
if ! wait_keys 'resource:X' 5 some; then
  fail "the long request never took resource:X"
fi
reserve X 10 "$work/late"
late_time=$(time_of "$work/late")
if [ "$(status_of "$work/late")" = 503 ] && grep -q '"error":"timed out waiting for the lock"' "$work/late" &&
  awk -v t="$late_time" 'BEGIN { exit !(t >= 0.9 && t < 1.5) }'; then
  pass "request for a held resource -> 503 timed out after ${late_time} s"
else
  fail "deadline: $(status_of "$work/late") after ${late_time} s: $(cat "$work/late")"
fi

# 5a. client gone while waiting: curl gives up after 0.5 s, with X still held.
curl_status=0
curl -s -X POST -o /dev/null --max-time 0.5 "$base/reserve/X?work_ms=10" || curl_status=$?
held=$(keys_on_nodes 'resource:X')
if [ "$curl_status" = 28 ] && [ -n "$held" ] &&
  wait_log 'POST /reserve/X?work_ms=10 499 .*client gone while waiting for the lock' 3; then
  pass "client gone while waiting: acquire cancelled (log: $(grep 'client gone while' "$work/service.err" | head -n 1))"
else
  fail "client gone while waiting: curl status $curl_status, X held: '$held'; log:"
  cat "$work/service.err"
fi
wait "$holder_pid" || true
background=()
if [ "$(status_of "$work/holder")" = 200 ] && (($(json_number worked_ms "$work/holder") >= 3000)); then
  pass "the holder of X finished: $(cat "$work/holder")"
else
  fail "holder of X: $(status_of "$work/holder") $(cat "$work/holder")"
fi
if wait_keys 'resource:*' 1 none; then
  pass "no resource key left after the holder finished"
else
  fail "keys left behind: $(keys_on_nodes 'resource:*')"
fi
# The cancelled request never held X: exactly one 200 for it, the holder's.
granted=$(grep -c '^POST /reserve/X?work_ms=10 200 ' "$work/service.err" || true)
if [ "$granted" = 0 ]; then
  pass "the cancelled request never got the lock"
else
  fail "a work_ms=10 request for X was granted $granted time(s)"
fi

# 5b. client gone during the work: the lock (kept alive by the watchdog) goes at once.
curl_status=0
curl -s -X POST -o /dev/null --max-time 0.5 "$base/reserve/Y?work_ms=5000" || curl_status=$?
gone_at=$(now_ms)
if [ "$curl_status" = 28 ] && wait_keys 'resource:Y' 1 none &&
  wait_log 'POST /reserve/Y?work_ms=5000 499 .*client gone during the work' 2; then
  pass "client gone during the work: lock released $(($(now_ms) - gone_at)) ms after curl gave up"
else
  fail "client gone during the work: curl status $curl_status, keys: $(keys_on_nodes 'resource:*')"
  cat "$work/service.err"
fi

# 6. metrics: the requests above took 7 locks and gave up 2 acquires (the deadline and the
# client gone while waiting); each hold is observed at its release, the last one (Y) maybe just
# after its key went.
scrape() {
  curl -s -o "$work/metrics" -w '%{http_code} %{content_type}\n' --max-time 5 "$base/metrics" \
    >"$work/metrics.meta" || true
}
deadline=$(($(now_ms) + 2000))
scrape
while [ "$(metric 'redlock_held_seconds_count{type="mutex"}' "$work/metrics")" != 7 ] &&
  (($(now_ms) < deadline)); do
  sleep 0.05
  scrape
done
problems=()
[ "$(cut -d' ' -f1 "$work/metrics.meta")" = 200 ] || problems+=("status $(cat "$work/metrics.meta")")
grep -q ' text/plain; version=0.0.4$' "$work/metrics.meta" || problems+=("content type: $(cat "$work/metrics.meta")")
for series in 'redlock_acquire_seconds_count{outcome="acquired",type="mutex"} 7' \
  'redlock_acquire_seconds_count{outcome="aborted",type="mutex"} 2' \
  'redlock_held_seconds_count{type="mutex"} 7' \
  'redlock_acquire_seconds_count{outcome="acquired",type="election"} 1'; do
  [ "$(metric "${series% *}" "$work/metrics")" = "${series##* }" ] ||
    problems+=("want '$series', got '$(metric "${series% *}" "$work/metrics")'")
done
grep -q '^redlock_acquire_seconds_bucket{outcome="acquired",type="mutex",le="0.005"} ' "$work/metrics" ||
  problems+=("no bucket le=0.005 of the mutex's acquires")
for node_port in "${REDIS_NODE_PORTS[@]}"; do
  replies=$(metric "redlock_node_requests_total{node=\"127.0.0.1:$node_port\",outcome=\"reply\"}" "$work/metrics")
  ((${replies:-0} > 0)) || problems+=("no replies counted for node 127.0.0.1:$node_port")
done
if grep -q 'resource:' "$work/metrics"; then
  problems+=("a lock name in a label: $(grep -m1 'resource:' "$work/metrics")")
fi
if [ ${#problems[@]} = 0 ]; then
  pass "GET /metrics: the lock events and node counters of the requests above"
else
  fail "GET /metrics: $(printf '%s; ' "${problems[@]}")"
  cat "$work/metrics"
fi

# 7. the leader: this instance (it campaigned first); a second instance names it too.
if wait_leader "$port" "$work/leader" "127.0.0.1:$port" 3 && grep -q '"self":true' "$work/leader"; then
  pass "GET /leader -> $(cat "$work/leader")"
else
  fail "GET /leader -> $(cat "$work/leader.meta") $(cat "$work/leader")"
fi
first_term=$(json_number term "$work/leader")
start_service second
second_pid=$started_pid
second_port=$started_port
background+=("$second_pid")
if wait_leader "$second_port" "$work/leader2" "127.0.0.1:$port" 3 && grep -q '"self":false' "$work/leader2"; then
  pass "the second instance's GET /leader -> $(cat "$work/leader2")"
else
  fail "the second instance's GET /leader -> $(cat "$work/leader2.meta") $(cat "$work/leader2")"
fi

# 8. SIGTERM with a holder and a waiter in flight.
start_reserve Z 5000 "$work/term1"
start_reserve Z 5000 "$work/term2"
if ! wait_keys 'resource:Z' 5 some; then
  fail "the request never took resource:Z"
fi
# Both requests must be in flight: one holds Z, the other waits for it.
if ! wait_waiter 'resource:Z' 5; then
  fail "the second request never waited for resource:Z"
fi
stop_service "$service_pid"
stopped_at=$(now_ms)
if [ "$stop_status" = 0 ] && ((stop_ms < 2000)); then
  pass "SIGTERM: exit 0 after $stop_ms ms"
  service_pid=
else
  fail "SIGTERM: exit status '${stop_status:-still running}' after $stop_ms ms"
fi
# The first resigned as it stopped: the second, next in line, leads.
if wait_leader "$second_port" "$work/leader2" "127.0.0.1:$second_port" 3 &&
  (($(json_number term "$work/leader2") > ${first_term:-0})); then
  pass "the second instance leads $(($(now_ms) - stopped_at)) ms after the first stopped: $(cat "$work/leader2")"
else
  fail "after the first stopped, the second's GET /leader -> $(cat "$work/leader2.meta") $(cat "$work/leader2")"
fi
for pid in "${background[@]}"; do
  [ "$pid" = "$second_pid" ] || wait "$pid" || true
done
background=("$second_pid")
if [ "$(status_of "$work/term1")" = 503 ] && [ "$(status_of "$work/term2")" = 503 ] &&
  grep -q 'shutting down' "$work/term1" && grep -q 'shutting down' "$work/term2"; then
  pass "requests in flight at SIGTERM -> 503 shutting down"
else
  fail "in flight at SIGTERM: $(status_of "$work/term1") $(cat "$work/term1") / $(status_of "$work/term2") $(cat "$work/term2")"
fi
stop_service "$second_pid"
if [ "$stop_status" = 0 ]; then
  pass "the second instance: exit 0 after $stop_ms ms"
  background=()
else
  fail "the second instance: exit status '${stop_status:-still running}' after $stop_ms ms"
fi
# Counters outlive the locks on purpose: a token or a ticket must never be handed out twice.
leftover=$(keys_on_nodes '*' | sed -E 's/ redlock:(fence|ticket):[^ ]*//g' | grep -v '^[0-9]*: *$' || true)
if [ -z "$leftover" ]; then
  pass "no key left on any node after SIGTERM but counters"
else
  fail "keys left after SIGTERM: $leftover"
  echo "---- the second instance's log"
  cat "$work/second.err"
fi

echo "---- service log"
cat "$work/service.err"
if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
