#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Shell-level tests of the redlock command-line tool (the ctest "cli", label "tools").
#
#   tools/test_cli.sh path/to/redlock
#
# Starts three redis-servers on free loopback ports (scripts/redis-nodes.sh), and one with TLS
# (certificates made with the openssl command, skipped without it), and stops them
# however the script ends. Every wait is bounded: on an event (a file a child writes, a
# subscription, a process exit) where there is one, on time only where time is the point
# (the watchdog must hold a lock for three expiries). Nothing is left running.
# The commands given to sh -c are single-quoted on purpose: sh expands them, not this script.
# shellcheck disable=SC2016
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 path/to/redlock" >&2
  exit 2
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
docs=$root/docs/cli.md

# shellcheck source=scripts/redis-nodes.sh
source "$root/scripts/redis-nodes.sh"

unset REDLOCK_NODES
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-cli-XXXXXX")
background=()   # redlock processes started with &
release_files=() # files that let the test's commands finish

cleanup() {
  local f pid i
  for f in "${release_files[@]}"; do
    : >"$f" 2>/dev/null || true
  done
  for pid in "${background[@]}"; do
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.02
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  # The commands' own pids, written by them, in case their redlock was killed above; only
  # while they are still the test's processes (their arguments name $work).
  for f in "$work"/*.pid; do
    [ -s "$f" ] || continue
    pid=$(<"$f")
    if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$work"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  stop_tls_server
  redis_nodes_stop
  rm -rf "$work"
}

# The TLS test's own redis-server (not one of redis-nodes.sh's).
stop_tls_server() {
  local pid i
  [ -s "$work/tls/redis.pid" ] || return 0
  pid=$(<"$work/tls/redis.pid")
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = redis-server ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 250; i++)); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = redis-server ] || return 0
    sleep 0.02
  done
  kill -KILL "$pid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

failures=0
pass() { echo "ok - $*"; }
fail() {
  echo "FAIL - $*" >&2
  failures=$((failures + 1))
}
die() {
  echo "FAIL - $*" >&2
  exit 1
}
now_ms() { date +%s%3N; }

# wait_file FILE [SECONDS]: until FILE exists and is not empty.
wait_file() {
  local deadline=$(($(now_ms) + ${2:-10} * 1000))
  while [ ! -s "$1" ]; do
    (($(now_ms) < deadline)) || die "timed out waiting for $1"
    sleep 0.02
  done
}

# wait_exit PID [SECONDS]: waits for a background redlock; its status in $status.
wait_exit() {
  local deadline=$(($(now_ms) + ${2:-20} * 1000))
  while kill -0 "$1" 2>/dev/null; do
    if (($(now_ms) >= deadline)); then
      kill -KILL "$1" 2>/dev/null || true
      die "redlock (pid $1) did not exit within ${2:-20} s"
    fi
    sleep 0.02
  done
  status=0
  wait "$1" || status=$?
  local rest=() pid
  for pid in "${background[@]}"; do
    [ "$pid" = "$1" ] || rest+=("$pid")
  done
  background=("${rest[@]}")
}

# rl NAME ARGS...: runs redlock in the foreground (bounded), stdout and stderr to
# $work/NAME.out and $work/NAME.err; its status in $status.
rl() {
  local name=$1
  shift
  status=0
  timeout -k 5 60 "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err" || status=$?
}

# expect_status WANT WHAT: compares $status.
expect_status() {
  if [ "$status" = "$1" ]; then
    pass "$2 (exit $status)"
  else
    fail "$2: expected exit $1, got $status"
    sed 's/^/    stderr: /' "$work/$3.err" >&2 2>/dev/null || true
  fi
}

# has FILE REGEX WHAT
has() {
  if grep -Eq -- "$2" "$1"; then
    pass "$3"
  else
    fail "$3: no match for /$2/ in $(basename "$1"):"
    sed 's/^/    /' "$1" >&2
  fi
}

# The key's remaining time to live on node I (0-based), in ms (-2 when missing).
pttl() { redis-cli -p "${REDIS_NODE_PORTS[$1]}" pttl "$2" | tr -d '\r'; }

# Subscribers of the release channel of KEY on all nodes: a waiting acquire listens there.
subscribers() {
  local port total=0 n
  for port in "${REDIS_NODE_PORTS[@]}"; do
    n=$(redis-cli -p "$port" pubsub numsub "redlock:released:$1" | tr -d '\r' | sed -n 2p)
    total=$((total + ${n:-0}))
  done
  echo "$total"
}
wait_subscribed() {
  local deadline=$(($(now_ms) + 10000))
  while [ "$(subscribers "$1")" = 0 ]; do
    (($(now_ms) < deadline)) || die "no waiter subscribed to the release of '$1' within 10 s"
    sleep 0.02
  done
}

# Sleeps up to 30 s.
loop='i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done'
# A command that holds the lock until told: writes its pid to $1, waits (at most 60 s) for
# the file $2, then creates $3.
hold='echo $$ >"$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done; : >"$3"'
# The same, but on SIGTERM it writes "TERM" to $3 and exits 143.
hold_term='trap "echo TERM >\"\$3\"; exit 143" TERM; echo $$ >"$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done'

# start_redlock NAME REDLOCK-ARGS... -- SCRIPT: starts `redlock ARGS -- sh -c SCRIPT sh NAME.pid
# NAME.release NAME.done` in the background (its pid in $holder), without waiting for it.
start_redlock() {
  local name=$1
  shift
  local args=()
  while [ "$1" != -- ]; do
    args+=("$1")
    shift
  done
  local script=$2
  release_files+=("$work/$name.release")
  "$bin" "${args[@]}" -- sh -c "$script" sh "$work/$name.pid" "$work/$name.release" \
    "$work/$name.done" >"$work/$name.out" 2>"$work/$name.err" &
  holder=$!
  background+=("$holder")
}

# start_holder NAME REDLOCK-ARGS... -- SCRIPT: starts `redlock run ARGS -- sh -c SCRIPT sh
# NAME.pid NAME.release NAME.done` in the background and waits until the command runs.
start_holder() {
  local name=$1
  shift
  start_redlock "$name" run "$@"
  wait_file "$work/$name.pid"
}

echo "== help"
for cmd in "" run elect status; do
  name="redlock ${cmd:+$cmd }--help"
  status=0
  # shellcheck disable=SC2086  # "" must vanish
  "$bin" $cmd --help >"$work/help.out" 2>"$work/help.err" || status=$?
  expect_status 0 "$name" help
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES; do
    grep -qx "$section" "$work/help.out" || fail "$name has no $section section"
  done
  # docs/cli.md quotes the text word for word, as one block.
  doc_text=$(<"$docs")
  help_text=$(<"$work/help.out")
  if [[ $doc_text == *"$help_text"* ]]; then
    pass "docs/cli.md repeats '$name'"
  else
    fail "docs/cli.md does not quote '$name' as it is; lines not in it:"
    while IFS= read -r line; do
      [ -z "$line" ] || grep -qxF -- "$line" "$docs" || echo "    $line" >&2
    done <"$work/help.out"
  fi
done
for cmd in run elect; do
  status=0
  "$bin" help $cmd >"$work/help2.out" || status=$?
  if "$bin" $cmd --help | cmp -s - "$work/help2.out" && [ $status = 0 ]; then
    pass "redlock help $cmd"
  else
    fail "redlock help $cmd differs from redlock $cmd --help"
  fi
done

redis_nodes_start 3
nodes=$(IFS=,; echo "${REDIS_NODE_URLS[*]}")
dead_port=$(_redis_free_port)

echo "== usage errors: exit 64 and one line on stderr"
usage_case() {
  local pattern=$1
  shift
  status=0
  timeout -k 5 30 "$bin" "$@" >"$work/usage.out" 2>"$work/usage.err" || status=$?
  local lines
  lines=$(wc -l <"$work/usage.err")
  if [ "$status" = 64 ] && [ "$lines" = 1 ] && [ ! -s "$work/usage.out" ] &&
    grep -Eq -- "$pattern" "$work/usage.err" && ! grep -q s3cret "$work/usage.err"; then
    local shown="$*"
    ((${#shown} <= 200)) || shown="${shown:0:200}..."
    pass "redlock $shown -> 64: $(cat "$work/usage.err")"
  else
    fail "redlock $*: expected exit 64 and one line matching /$pattern/, got exit $status:"
    sed 's/^/    /' "$work/usage.err" >&2
  fi
}
usage_case "no command given"
usage_case "unknown command 'frob'" frob
usage_case "unknown option '--bogus'" run --bogus
usage_case "unknown option '--bogus'" run --nodes "$nodes" --key k --bogus -- true
usage_case "malformed node URL 'notaurl://x'" run --nodes notaurl://x --key k -- true
usage_case "malformed node URL" run --nodes "redis://:s3cret@127.0.0.1:99999" --key k -- true
usage_case "repeats an earlier node" run \
  --nodes "redis://:s3cret@127.0.0.1:1,redis://:s3cret@127.0.0.1:1" --key k -- true
usage_case "empty URL" run --nodes "$nodes," --key k -- true
usage_case "--nodes is required" run --key k -- true
REDLOCK_NODES=redis://h:0 usage_case "^redlock run: REDLOCK_NODES: malformed node URL" run --key k -- true
usage_case "--key is required" run --nodes "$nodes" -- true
usage_case "--expiry: .*'10q'" run --nodes "$nodes" --key k --expiry 10q -- true
usage_case "--wait: .*'soon'" run --nodes "$nodes" --key k --wait soon -- true
usage_case "--kill-after: .*'-1s'" run --nodes "$nodes" --key k --kill-after=-1s -- true
usage_case "--expiry must be more than 0" run --nodes "$nodes" --key k --expiry 0 -- true
usage_case "--expiry \(1 ms\) leaves no validity" run --nodes "$nodes" --key k --expiry 1ms -- true
usage_case "--signal: unknown signal 'NOPE'" run --nodes "$nodes" --key k --signal NOPE -- true
usage_case "--key needs a value" run --nodes "$nodes" --key
usage_case "--quiet takes no value" run --nodes "$nodes" --key k --quiet=yes -- true
usage_case "no command to run" run --nodes "$nodes" --key k
usage_case "-k needs a value" run --nodes "$nodes" -k
usage_case "--wait: .*'soon'" run --nodes "$nodes" -k k -w soon -- true
usage_case "--conflict-exit-code: '256' is not an exit status \(0 to 255\)" run --nodes "$nodes" -k k -E 256 -- true
usage_case "--conflict-exit-code: 'x' is not an exit status" run --nodes "$nodes" -k k --conflict-exit-code=x -- true
usage_case "--nonblock takes no value" run --nodes "$nodes" -k k --nonblock=1 -- true
usage_case "no KEY given" status --nodes "$nodes"
usage_case "a comma in the host" run --nodes "redis://127.0.0.1:1,127.0.0.1:2" -k k -- true
usage_case "names the master after the Sentinels" status --nodes "redis-sentinel://127.0.0.1:1" k
usage_case "only database 0" status --nodes "redis://127.0.0.1:1,redis-cluster://127.0.0.1:2,127.0.0.1:3/4" k
usage_case "unknown option '--wait'" status --nodes "$nodes" --wait 1s k
usage_case "--timeout: .*'fast'" status --nodes "$nodes" --timeout fast k
usage_case "--key-prefix 'a\{b' opens a hash tag" run --nodes "$nodes" --key-prefix 'a{b' --key k -- true
REDLOCK_KEY_PREFIX='x{}' usage_case "^redlock status: REDLOCK_KEY_PREFIX 'x\{\}' holds an empty hash tag" \
  status --nodes "$nodes" k
usage_case "--permits: '0' is not a number of permits \(1 or more\)" run --nodes "$nodes" -k k --permits 0 -- true
usage_case "--permits: 'two' is not a number of permits" run --nodes "$nodes" -k k --permits=two -- true
usage_case "--shared and --permits exclude each other" run --nodes "$nodes" -k k --permits 2 -s -- true
usage_case "--exclusive and --shared exclude each other" run --nodes "$nodes" -k k -s -x -- true
usage_case "--shared takes no value" run --nodes "$nodes" -k k --shared=1 -- true
usage_case "^redlock run: --fair and --shared exclude each other: a fair lock has one holder at a time \(see" \
  run --nodes "$nodes" -k k --fair -s -- true
usage_case "^redlock run: --fair and --permits exclude each other: a fair lock has one holder at a time \(see" \
  run --nodes "$nodes" -k k --permits 2 --fair -- true
usage_case "--fair takes no value" run --nodes "$nodes" -k k --fair=1 -- true
usage_case "^redlock elect: no NAME given" elect --nodes "$nodes"
usage_case "^redlock elect: no PROPOSAL given" elect --nodes "$nodes" t-e -- true
usage_case "^redlock elect: NAME must not be empty" elect --nodes "$nodes" "" v -- true
usage_case "^redlock elect: --nodes is required" elect t-e v -- true
usage_case "^redlock elect: --listen takes NAME alone" elect -l --nodes "$nodes" t-e v
usage_case "^redlock elect: --listen takes NAME alone" elect --nodes "$nodes" t-e --listen -- true
usage_case "^redlock elect: NAME must not be empty" elect --nodes "$nodes" --listen=
usage_case "^redlock elect: --listen and -w exclude each other" elect -l -w 5 --nodes "$nodes" t-e
usage_case "^redlock elect: --listen and --expiry exclude each other" elect --expiry=5s -l --nodes "$nodes" t-e
usage_case "^redlock elect: unknown option '--fair'" elect --nodes "$nodes" --fair t-e v -- true
usage_case "^redlock elect: unknown option '-k'" elect --nodes "$nodes" -k t-e v -- true
usage_case "^redlock elect: unknown option '--bogus'" elect --nodes "$nodes" t-e v --bogus
usage_case "^redlock elect: PROPOSAL is 65537 bytes long: a leader publishes at most 65536" \
  elect --nodes "$nodes" t-e "$(head -c 65537 /dev/zero | tr '\0' x)" -- true
usage_case "^redlock elect: --wait: .*'soon'" elect --nodes "$nodes" -w soon t-e v -- true
usage_case "^redlock: no help on 'frob': the commands are run, elect and status" help frob
[ -e "$work/never" ] && fail "a usage error ran the command"

echo "== run: the command's exit status"
rl exit7 run --nodes "$nodes" --key t-exit -- sh -c 'exit 7'
expect_status 7 "run -- sh -c 'exit 7'" exit7
rl exit0 run --nodes "$nodes" --key t-exit -- true
expect_status 0 "run -- true" exit0
rl args run --nodes "$nodes" --key t-exit -- printf '%s|' 'two words' "*" '$HOME'
expect_status 0 "arguments reach the command unchanged" args
if [ "$(cat "$work/args.out")" = 'two words|*|$HOME|' ]; then
  pass "no shell between redlock and the command"
else
  fail "arguments changed: $(cat "$work/args.out")"
fi
rl killed run --nodes "$nodes" --key t-exit -- sh -c 'kill -USR1 $$'
expect_status 138 "a command killed by SIGUSR1 gives 128+10" killed
REDLOCK_NODES=$nodes rl env run --key t-exit -- sh -c 'exit 5'
expect_status 5 "REDLOCK_NODES stands in for --nodes" env
rl nocmd run --nodes "$nodes" --key t-exit -- /nonexistent/command
expect_status 127 "a command that does not exist gives 127, as env(1) does" nocmd
has "$work/nocmd.err" "cannot run '/nonexistent/command': No such file or directory" \
  "the message names the command and the cause"
rl nocmd2 run --nodes "$nodes" --key t-exit -- redlock-no-such-command-on-path
expect_status 127 "a command not found in PATH gives 127" nocmd2
printf '#!/bin/sh\ntouch "$1"\n' >"$work/not-executable"
chmod 644 "$work/not-executable"
rl noexec run --nodes "$nodes" -k t-exit -- "$work/not-executable" "$work/never"
expect_status 126 "a command that is not executable gives 126" noexec
has "$work/noexec.err" "cannot run '.*not-executable': Permission denied" "the message says why"
rl nodir run --nodes "$nodes" -k t-exit -- "$work"
expect_status 126 "a directory as the command gives 126" nodir
rl free1 status --nodes "$nodes" t-exit
has "$work/free1.out" "^t-exit: free on 3 of 3 nodes$" "the lock is released after each run"

echo "== run: the command inherits the descriptors redlock was given, no others"
sh -c 'ls /proc/$$/fd' >"$work/fds-direct.out" 3<"$bin"
rl fds run --nodes "$nodes" --key t-fds -- sh -c 'ls /proc/$$/fd' 3<"$bin"
expect_status 0 "run -- ls /proc/self/fd" fds
if cmp -s "$work/fds-direct.out" "$work/fds.out"; then
  pass "same descriptors as without redlock: $(tr '\n' ' ' <"$work/fds.out")"
else
  fail "descriptors differ: direct $(tr '\n' ' ' <"$work/fds-direct.out"), under redlock $(tr '\n' ' ' <"$work/fds.out")"
fi

echo "== run: contention, --wait, status"
start_holder a --nodes "$nodes" --key t-busy -- "$hold"
a=$holder
rl busy run --nodes "$nodes" --key t-busy --wait 0 -- touch "$work/never"
expect_status 1 "a second run --wait 0 while the lock is held" busy
has "$work/busy.err" "lock 't-busy' is held by another owner" "the message says the lock is taken"
[ -e "$work/never" ] && fail "the second run ran its command"
rl quiet run --nodes "$nodes" --key t-busy -n --quiet -- touch "$work/never"
expect_status 1 "run --quiet while held" quiet
if [ -s "$work/quiet.err" ]; then
  fail "--quiet printed: $(cat "$work/quiet.err")"
else
  pass "--quiet prints nothing"
fi
rl verbose run --nodes "$nodes" --key t-busy --nonblock --verbose -- touch "$work/never"
expect_status 1 "run --verbose while held" verbose
rl conflict run --nodes "$nodes" -k t-busy -n -E 42 -- touch "$work/never"
expect_status 42 "run -n -E 42 while held" conflict
rl conflict0 run --nodes "$nodes" -k t-busy -n --conflict-exit-code=0 -q -- touch "$work/never"
expect_status 0 "run -n --conflict-exit-code=0 while held" conflict0
started=$(now_ms)
rl bounded run --nodes "$nodes" -k t-busy -w 0.3 -E 9 -- touch "$work/never"
expect_status 9 "run -w 0.3 (seconds, as flock -w) while held" bounded
waited=$(($(now_ms) - started))
# The last attempt may end a few ms before the bound; the bound itself is well below 5 s.
if ((waited >= 250 && waited < 5000)); then
  pass "-w 0.3 waited $waited ms before giving up"
else
  fail "-w 0.3 gave up after $waited ms, not about 300"
fi
has "$work/bounded.err" "lock 't-busy' is held by another owner \(after [0-9]+ ms\)" "the message says how long it waited"
for port in "${REDIS_NODE_PORTS[@]}"; do
  has "$work/verbose.err" "127.0.0.1:$port taken" "--verbose reports node $port as taken"
done

rl held status --nodes "$nodes" t-busy
expect_status 0 "status while held" held
# A plain run is the writer of a read-write lock: its entry is "w:" and its owner value.
value=$(redis-cli -p "${REDIS_NODE_PORTS[0]}" hkeys t-busy | tr -d '\r' | sed -n 's/^w://p')
if grep -qxF "t-busy: write-locked by $value (each on a quorum: 2 of 3 nodes)" "$work/held.out"; then
  pass "status: write-locked by the holder's value on 3 of 3 nodes"
else
  fail "status: no summary 'write-locked by $value':"
  sed 's/^/    /' "$work/held.out" >&2
fi
for port in "${REDIS_NODE_PORTS[@]}"; do
  if grep -Eq "^  127\.0\.0\.1:$port  written by .* \(ttl [0-9]+ ms\)$" "$work/held.out" &&
    grep -F "127.0.0.1:$port  written by $value (ttl" "$work/held.out" >/dev/null; then
    ttl=$(grep -F "127.0.0.1:$port " "$work/held.out" | sed -E 's/.*ttl ([0-9]+) ms.*/\1/')
    if ((ttl > 0 && ttl <= 30000)); then
      pass "status: node $port held by the holder's value, ttl $ttl ms"
    else
      fail "status: node $port ttl $ttl out of (0, 30000]"
    fi
  else
    fail "status: no holder line for node $port:"
    sed 's/^/    /' "$work/held.out" >&2
  fi
done

"$bin" run --nodes "$nodes" --key t-busy -- \
  sh -c 'test -e "$1" && echo second >"$2"' sh "$work/a.done" "$work/b.ran" \
  >"$work/b.out" 2>"$work/b.err" &
b=$!
background+=("$b")
wait_subscribed t-busy # the waiter made its attempt and listens for the release
# A holder is waited for however long it holds: time is the point here, longer than an outage
# of the nodes takes to end the wait (two connect timeouts).
sleep 2.5
if kill -0 "$b" 2>/dev/null; then
  pass "run without -n or -w still waits for the holder after 2.5 s"
else
  fail "run without -n or -w stopped waiting while the holder held the lock"
fi
: >"$work/a.release"
wait_exit "$a"
expect_status 0 "the holder's command finished" a
wait_exit "$b"
expect_status 0 "run without -n or -w waited, as flock does, and then succeeded" b
if [ -s "$work/b.ran" ]; then
  pass "the waiter's command ran after the holder's had finished"
else
  fail "the waiter's command ran before the holder finished (or not at all)"
fi
rl freed status --nodes "$nodes" t-busy
expect_status 0 "status after release" freed
has "$work/freed.out" "^t-busy: free on 3 of 3 nodes$" "status: free after the release"
if [ "$(grep -c '  free$' "$work/freed.out")" = 3 ]; then
  pass "status: every node says free"
else
  fail "status: not every node says free"
fi

# status_shows NAME KEY SUMMARY NODE WHAT: `redlock status KEY` succeeds with the summary line
# SUMMARY and the line NODE for every node (both regular expressions).
status_shows() {
  local port
  rl "$1" status --nodes "$nodes" "$2"
  expect_status 0 "status: $5" "$1"
  has "$work/$1.out" "^$2: $3\$" "status: the summary says $5"
  for port in "${REDIS_NODE_PORTS[@]}"; do
    has "$work/$1.out" "^  127\.0\.0\.1:$port  $4\$" "status: node $port shows $5, each with its expiry"
  done
}
# One entry of a read-write lock or a semaphore in status: an owner value and its expiry.
entry='[^ ]+ \(ttl [0-9]+ ms\)'

echo "== run: -s readers together, -x alone, a waiting -x keeps new readers out"
start_holder r1 --nodes "$nodes" -s -k t-rw -- "$hold"
r1=$holder
# The second reader's command starts while the first's still runs (it waits for r1.release).
start_holder r2 --nodes "$nodes" --shared -k t-rw -- "$hold"
r2=$holder
if [ ! -e "$work/r1.done" ] && kill -0 "$r1" 2>/dev/null; then
  pass "two -s runs hold t-rw at once"
else
  fail "the first -s run ended before the second started"
fi
rl xbusy run --nodes "$nodes" -x -n -k t-rw -- touch "$work/never"
expect_status 1 "-x -n while readers hold the lock" xbusy
has "$work/xbusy.err" "lock 't-rw' is held by another owner" "the message says the lock is taken"
rl plainbusy run --nodes "$nodes" -n -k t-rw -- touch "$work/never"
expect_status 1 "a plain run -n while -s runs hold the key" plainbusy
# A plain run: -x is the default.
"$bin" run --nodes "$nodes" -k t-rw -- \
  sh -c 'test -e "$1" && test -e "$2" && echo writer >"$3"' sh "$work/r1.done" "$work/r2.done" \
  "$work/x.ran" >"$work/x.out" 2>"$work/x.err" &
x=$!
background+=("$x")
wait_subscribed t-rw # the writer made its attempt, recorded its intent, and waits
status_shows rwstatus t-rw "read-locked by 2 reader\(s\), a writer waiting \(each on a quorum: 2 of 3 nodes\)" \
  "read by $entry, $entry; a writer waiting: $entry" "two readers and a waiting writer"
rl rlate run --nodes "$nodes" -s -n -k t-rw -- touch "$work/never"
expect_status 1 "-s -n while a -x run waits for the readers" rlate
[ -e "$work/never" ] && fail "a refused run ran its command"
: >"$work/r1.release"
wait_exit "$r1"
expect_status 0 "the first reader finished" r1
: >"$work/r2.release"
wait_exit "$r2"
expect_status 0 "the second reader finished" r2
wait_exit "$x"
expect_status 0 "a plain run (-x, the default) waited for both readers, then ran" x
if [ -s "$work/x.ran" ]; then
  pass "the writer's command ran after both readers' had finished"
else
  fail "the writer's command ran before the readers finished"
fi
rl rwfree status --nodes "$nodes" t-rw
has "$work/rwfree.out" "^t-rw: free on 3 of 3 nodes$" "the read-write lock is gone after the runs"
start_holder rw-w --nodes "$nodes" -x -k t-rw -- "$hold"
w=$holder
rl wstatus status --nodes "$nodes" t-rw
has "$work/wstatus.out" "^t-rw: write-locked by [^ ]+ \(each on a quorum: 2 of 3 nodes\)$" \
  "status: a writer holds the read-write lock"
has "$work/wstatus.out" "^  127\.0\.0\.1:${REDIS_NODE_PORTS[0]}  written by [^ ]+ \(ttl [0-9]+ ms\)$" \
  "status: the node's line names the writer with its expiry"
: >"$work/rw-w.release"
wait_exit "$w"
expect_status 0 "the writer finished" rw-w
# A plain run is the writer: it and the readers exclude each other, as do two writers.
start_holder rw-plain --nodes "$nodes" -k t-rw -- "$hold"
p=$holder
rl rwplain run --nodes "$nodes" -s -n -k t-rw -- touch "$work/never"
expect_status 1 "-s -n while a plain run holds the key" rwplain
rl rwplainx run --nodes "$nodes" -x -n -k t-rw -- touch "$work/never"
expect_status 1 "-x -n while a plain run holds the key" rwplainx
rl rwplain2 run --nodes "$nodes" -n -k t-rw -- touch "$work/never"
expect_status 1 "a plain run -n while another plain run holds the key" rwplain2
[ -e "$work/never" ] && fail "a refused run ran its command"
: >"$work/rw-plain.release"
wait_exit "$p"
expect_status 0 "the plain run finished" rw-plain

echo "== run: --permits N lets N runs in"
start_holder s1 --nodes "$nodes" --permits 2 -k t-sem -- "$hold"
s1=$holder
start_holder s2 --nodes "$nodes" --permits=2 -k t-sem -- "$hold"
s2=$holder
if [ ! -e "$work/s1.done" ] && kill -0 "$s1" 2>/dev/null; then
  pass "two --permits 2 runs hold t-sem at once"
else
  fail "the first permit's run ended before the second started"
fi
status_shows semstatus t-sem "2 of 2 permit\(s\) in use \(each on a quorum: 3 of 3 nodes\)" \
  "2 of 2 permit\(s\) in use: $entry, $entry" "two permits of two in use"
rl sfull run --nodes "$nodes" --permits 2 -n -E 7 -k t-sem -- touch "$work/never"
expect_status 7 "a third --permits 2 -n -E 7 while two hold permits" sfull
rl smismatch run --nodes "$nodes" --permits 3 -n -k t-sem -- touch "$work/never"
expect_status 64 "--permits 3 while the holders use 2" smismatch
has "$work/smismatch.err" "another number of permits than --permits 3" "the message names --permits"
has "$work/smismatch.err" "use 2 permits, this client 3" "each node's line names both numbers"
rl smismatchq run --nodes "$nodes" --permits 3 -n -q -k t-sem -- touch "$work/never"
expect_status 64 "--permits 3 --quiet while the holders use 2" smismatchq
[ -e "$work/never" ] && fail "a refused run ran its command"
"$bin" run --nodes "$nodes" --permits 2 -k t-sem -- \
  sh -c 'test -e "$1" && echo third >"$2"' sh "$work/s1.done" "$work/s3.ran" \
  >"$work/s3.out" 2>"$work/s3.err" &
s3=$!
background+=("$s3")
wait_subscribed t-sem
: >"$work/s1.release"
wait_exit "$s1"
expect_status 0 "the first permit's run finished" s1
wait_exit "$s3"
expect_status 0 "a third --permits 2 run waited for a permit, then ran" s3
if [ -s "$work/s3.ran" ]; then
  pass "the third run's command ran after a permit was given back"
else
  fail "the third run's command ran while two permits were held"
fi
: >"$work/s2.release"
wait_exit "$s2"
expect_status 0 "the second permit's run finished" s2
rl semfree status --nodes "$nodes" t-sem
has "$work/semfree.out" "^t-sem: free on 3 of 3 nodes$" "the semaphore is gone after the runs"

echo "== run: --fair runs get the lock in the order they came"
# wait_queued KEY N: until the fair queue of KEY has N entries on every node.
wait_queued() {
  local deadline=$(($(now_ms) + 10000)) port n
  for port in "${REDIS_NODE_PORTS[@]}"; do
    while n=$(redis-cli -p "$port" zcard "redlock:queue:$1" | tr -d '\r'); [ "$n" != "$2" ]; do
      (($(now_ms) < deadline)) || die "the fair queue of '$1' on port $port has $n entries, not $2"
      sleep 0.02
    done
  done
}
queue_of() { redis-cli -p "${REDIS_NODE_PORTS[0]}" zrange "redlock:queue:$1" 0 -1 | tr -d '\r'; }
start_holder fh --nodes "$nodes" --fair -k t-fair -- "$hold"
fh=$holder
rl fbusy run --nodes "$nodes" --fair -n -k t-fair -- touch "$work/never"
expect_status 1 "--fair -n while a --fair run holds the lock" fbusy
"$bin" run --nodes "$nodes" --fair -k t-fair -- sh -c 'echo first >>"$1"' sh "$work/fair.order" \
  >"$work/f1.out" 2>"$work/f1.err" &
f1=$!
background+=("$f1")
wait_queued t-fair 2 # the holder keeps its own entry at the head
"$bin" run --nodes "$nodes" --fair -k t-fair -- sh -c 'echo second >>"$1"' sh "$work/fair.order" \
  >"$work/f2.out" 2>"$work/f2.err" &
f2=$!
background+=("$f2")
wait_queued t-fair 3
queue=$(queue_of t-fair)
# Time is the point: longer than two connect timeouts, the span in which a run watches for
# an outage. A fair run keeps one acquire, and so one place, for its whole wait.
sleep 2.5
if [ "$(queue_of t-fair)" = "$queue" ]; then
  pass "both waiters kept their places (the same owner values in the same order) for 2.5 s"
else
  fail "the queue changed while they waited: $(echo "$queue" | tr '\n' ' ') -> $(queue_of t-fair | tr '\n' ' ')"
fi
first=$(echo "$queue" | sed -n 2p)
second=$(echo "$queue" | sed -n 3p)
holder_value=$(redis-cli -p "${REDIS_NODE_PORTS[0]}" get t-fair | tr -d '\r')
rl fstatus status --nodes "$nodes" t-fair
expect_status 0 "status of a fair lock with two waiters" fstatus
if grep -qxF "t-fair: locked by $holder_value on 3 of 3 nodes (quorum 2); 2 waiting in line: $first, $second" \
  "$work/fstatus.out"; then
  pass "status: the summary names the holder and both waiters in order"
else
  fail "status: no summary with the holder and the waiters $first, $second:"
  sed 's/^/    /' "$work/fstatus.out" >&2
fi
for port in "${REDIS_NODE_PORTS[@]}"; do
  line=$(grep -F "  127.0.0.1:$port  " "$work/fstatus.out" || true)
  if [[ "$line" == "  127.0.0.1:$port  held by $holder_value, ttl "*" ms; queue: $first (ttl "*" ms), $second (ttl "*" ms)" ]]; then
    pass "status: node $port shows the holder and the queue in order, each entry with its expiry"
  else
    fail "status: node $port's line is '$line'"
  fi
done
rl fnb2 run --nodes "$nodes" --fair -n -k t-fair -- touch "$work/never"
expect_status 1 "--fair -n while two runs wait in line" fnb2
: >"$work/fh.release"
wait_exit "$fh"
expect_status 0 "the fair holder finished" fh
wait_exit "$f1"
expect_status 0 "the first fair waiter ran" f1
wait_exit "$f2"
expect_status 0 "the second fair waiter ran" f2
if [ "$(tr '\n' ' ' <"$work/fair.order")" = "first second " ]; then
  pass "the fair waiters ran in the order they came"
else
  fail "the fair waiters ran in the order: $(tr '\n' ' ' <"$work/fair.order")"
fi
rl ffree status --nodes "$nodes" t-fair
has "$work/ffree.out" "^t-fair: free on 3 of 3 nodes$" "the fair lock and its queue are gone after the runs"

echo "== run: kinds mixed on one key never hold it together"
# Each kind keeps its own format under the key: a --fair run a string, a plain run a hash, a
# --permits run a sorted set. A run of another kind is refused (a node error: 69), or, for
# --fair, finds the key held (1); none runs its command.
start_holder mix-f --nodes "$nodes" --fair -k t-mix -- "$hold"
mf=$holder
for kind in -x -s "--permits 2"; do
  # shellcheck disable=SC2086  # "--permits 2" is two words
  rl mix run --nodes "$nodes" $kind -n -k t-mix -- touch "$work/never"
  expect_status 69 "run $kind -n while a --fair run holds the key" mix
done
rl mixwait run --nodes "$nodes" -w 5 -k t-mix -- touch "$work/never"
expect_status 69 "a plain run that may wait, while a --fair run holds the key" mixwait
rl mixwait2 run --nodes "$nodes" -k t-mix -- touch "$work/never"
expect_status 69 "a plain run without -w, while a --fair run holds the key" mixwait2
: >"$work/mix-f.release"
wait_exit "$mf"
expect_status 0 "the --fair holder finished" mix-f
start_holder mix-p --nodes "$nodes" -k t-mix -- "$hold"
mp=$holder
rl mixfair run --nodes "$nodes" --fair -n -k t-mix -- touch "$work/never"
expect_status 1 "--fair -n while a plain run holds the key" mixfair
# What a plain mutex (make_mutex, or a plain run of a redlock whose plain run was one) does
# to take the key: refused on every node.
for port in "${REDIS_NODE_PORTS[@]}"; do
  if [ -z "$(redis-cli -p "$port" set t-mix someone nx px 60000 | tr -d '\r')" ]; then
    pass "a mutex's SET NX on port $port is refused while a plain run holds the key"
  else
    fail "a mutex's SET NX on port $port took the key from a plain run"
  fi
done
rl mixsem run --nodes "$nodes" --permits 2 -n -k t-mix -- touch "$work/never"
expect_status 69 "--permits 2 -n while a plain run holds the key" mixsem
: >"$work/mix-p.release"
wait_exit "$mp"
expect_status 0 "the plain holder finished" mix-p
start_holder mix-s --nodes "$nodes" --permits 2 -k t-mix -- "$hold"
ms=$holder
rl mixplain run --nodes "$nodes" -n -k t-mix -- touch "$work/never"
expect_status 69 "a plain run -n while a --permits run holds the key" mixplain
rl mixfair2 run --nodes "$nodes" --fair -n -k t-mix -- touch "$work/never"
expect_status 1 "--fair -n while a --permits run holds the key" mixfair2
: >"$work/mix-s.release"
wait_exit "$ms"
expect_status 0 "the --permits holder finished" mix-s
[ -e "$work/never" ] && fail "a run of another kind ran its command while the key was held"

echo "== --key-prefix and REDLOCK_KEY_PREFIX"
port0=${REDIS_NODE_PORTS[0]}
rl pfx1 run --nodes "$nodes" --key-prefix app:locks: --key t-pfx -- \
  sh -c 'redis-cli -p "$1" exists app:locks:t-pfx t-pfx' sh "$port0"
expect_status 0 "run --key-prefix" pfx1
has "$work/pfx1.out" "^1$" "the lock key is the prefix and KEY, and KEY itself was not set"
REDLOCK_KEY_PREFIX=app:locks: rl pfx2 run --nodes "$nodes" --key t-pfx -- \
  "$bin" status --nodes "$nodes" t-pfx
expect_status 0 "REDLOCK_KEY_PREFIX stands in for --key-prefix" pfx2
has "$work/pfx2.out" "^app:locks:t-pfx: write-locked by .* \(each on a quorum: 2 of 3 nodes\)$" \
  "status reads the prefixed key and names it"
for port in "${REDIS_NODE_PORTS[@]}"; do
  redis-cli -p "$port" set t-pfx '{"name":"x"}' >/dev/null
done
REDLOCK_KEY_PREFIX=ignored: rl pfx3 status --nodes "$nodes" --key-prefix app:locks: t-pfx
expect_status 0 "status --key-prefix over REDLOCK_KEY_PREFIX" pfx3
has "$work/pfx3.out" "^app:locks:t-pfx: free on 3 of 3 nodes$" \
  "an application's own key of the lock's name is not read as a lock"
REDLOCK_KEY_PREFIX=app:locks: rl pfx4 status --nodes "$nodes" --key-prefix '' t-pfx
has "$work/pfx4.out" "^t-pfx: " "--key-prefix '' overrides REDLOCK_KEY_PREFIX"
if [ "$(redis-cli -p "$port0" get t-pfx | tr -d '\r')" = '{"name":"x"}' ]; then
  pass "the application's key is untouched"
else
  fail "the application's key t-pfx changed"
fi

echo "== run: the watchdog holds a 1 s lock for 3 s"
start_holder w --nodes "$nodes" --key t-watch --expiry 1s -- "$hold"
w=$holder
start=$(now_ms)
tries=0
while (($(now_ms) - start < 3200)); do
  rl contender run --nodes "$nodes" --key t-watch --wait 0 -- touch "$work/never"
  tries=$((tries + 1))
  if [ "$status" != 1 ]; then
    fail "a contender at $(($(now_ms) - start)) ms got exit $status instead of 1"
    break
  fi
  ttl=$(pttl 0 t-watch)
  ((ttl > 0 && ttl <= 1000)) || fail "PTTL $ttl at $(($(now_ms) - start)) ms is not in (0, 1000]"
  sleep 0.2 # pacing of the contenders, not synchronisation
done
pass "$tries contenders over $(($(now_ms) - start)) ms all found the lock held"
: >"$work/w.release"
wait_exit "$w"
expect_status 0 "the watched command finished normally" w
if [ "$(pttl 0 t-watch)" = -2 ]; then
  pass "released afterwards"
else
  fail "t-watch still set after the run"
fi

echo "== run: a lost lock stops the command (exit 3)"
start_holder l --nodes "$nodes" --key t-lost --expiry 1s -- "$hold_term"
l=$holder
deleted=$(now_ms)
redis-cli -p "${REDIS_NODE_PORTS[0]}" del t-lost >/dev/null
redis-cli -p "${REDIS_NODE_PORTS[1]}" del t-lost >/dev/null
wait_exit "$l" 10
expect_status 3 "run exits 3 after the key was deleted on 2 of 3 nodes" l
echo "    stopped $(($(now_ms) - deleted)) ms after the deletion"
if [ "$(cat "$work/l.done" 2>/dev/null)" = TERM ]; then
  pass "the command got SIGTERM"
else
  fail "the command did not get SIGTERM"
fi
has "$work/l.err" "lock 't-lost' lost while 'sh' ran; sending SIGTERM" "the message says the lock was lost"
rl lostfree status --nodes "$nodes" t-lost
has "$work/lostfree.out" "^t-lost: free on 3 of 3 nodes$" "the remaining key was deleted too"

echo "== run: --kill-after sends SIGKILL to a command that ignores the signal"
start_holder k --nodes "$nodes" --key t-kill --expiry 1s --kill-after 300ms -- "trap '' TERM; $hold"
k=$holder
redis-cli -p "${REDIS_NODE_PORTS[1]}" del t-kill >/dev/null
redis-cli -p "${REDIS_NODE_PORTS[2]}" del t-kill >/dev/null
wait_exit "$k" 10
expect_status 3 "run exits 3 after SIGKILL" k
has "$work/k.err" "still running 300 ms after SIGTERM; sending SIGKILL" "the message says SIGKILL was sent"

echo "== run: --process-group --signal USR1 stops the command's children too"
start_holder g --nodes "$nodes" --key t-group --expiry 1s --signal USR1 --process-group -- \
  "sh -c '$loop' sh \"\$3\" & echo \$! >\"\$3.pid\"; echo \$\$ >\"\$1\"; wait"
g=$holder
wait_file "$work/g.done.pid"
child=$(<"$work/g.done.pid")
redis-cli -p "${REDIS_NODE_PORTS[0]}" del t-group >/dev/null
redis-cli -p "${REDIS_NODE_PORTS[2]}" del t-group >/dev/null
wait_exit "$g" 10
expect_status 3 "run --process-group exits 3" g
has "$work/g.err" "sending SIGUSR1" "the configured signal was sent"
deadline=$(($(now_ms) + 5000))
while kill -0 "$child" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$child/status" 2>/dev/null; do
  (($(now_ms) < deadline)) || break
  sleep 0.02
done
if kill -0 "$child" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$child/status" 2>/dev/null; then
  fail "the command's child (sleep, pid $child) survived"
else
  pass "the command's child was stopped with it"
fi

echo "== run: SIGTERM to redlock is passed on to the command"
start_holder f --nodes "$nodes" --key t-fwd -- "$hold_term"
f=$holder
kill -TERM "$f"
wait_exit "$f"
expect_status 143 "run exits with the command's status after a forwarded SIGTERM" f
if [ "$(cat "$work/f.done" 2>/dev/null)" = TERM ]; then
  pass "the command got the SIGTERM"
else
  fail "the command did not get the SIGTERM"
fi
rl fwdfree status --nodes "$nodes" t-fwd
has "$work/fwdfree.out" "^t-fwd: free on 3 of 3 nodes$" "released after the command ended"

start_holder u --nodes "$nodes" --key t-fwd -- 'trap "echo USR1 >\"\$3\"; exit 7" USR1; '"$hold"
u=$holder
kill -USR1 "$u"
wait_exit "$u"
expect_status 7 "a forwarded SIGUSR1 too (the command exits 7 on it)" u
if [ "$(cat "$work/u.done" 2>/dev/null)" = USR1 ]; then
  pass "the command got the SIGUSR1"
else
  fail "the command did not get the SIGUSR1"
fi

echo "== run: SIGTERM while waiting for the lock gives up (128+15)"
start_holder h --nodes "$nodes" --key t-int -- "$hold"
h=$holder
"$bin" run --nodes "$nodes" --key t-int --wait forever -- touch "$work/never" \
  >"$work/i.out" 2>"$work/i.err" &
i=$!
background+=("$i")
wait_subscribed t-int
kill -TERM "$i"
wait_exit "$i"
expect_status 143 "a waiting run interrupted by SIGTERM" i
has "$work/i.err" "interrupted by SIGTERM while waiting for lock 't-int'" "the message says so"
[ -e "$work/never" ] && fail "the interrupted run ran its command"
rl stillheld status --nodes "$nodes" t-int
has "$work/stillheld.out" "^t-int: write-locked by " "the holder still holds the lock"
: >"$work/h.release"
wait_exit "$h"
expect_status 0 "the holder finished" h

echo "== run: misconfigured or unreachable nodes exit 69, never the busy status"
unwanted=""
for port in "${REDIS_NODE_PORTS[@]}"; do
  unwanted+="${unwanted:+,}redis://:not-wanted@127.0.0.1:$port"
done
rl misconf run --nodes "$unwanted" --key t-misconf -- touch "$work/never"
expect_status 69 "run with a password the servers do not want" misconf
has "$work/misconf.err" "nodes misconfigured" "the message says the nodes are misconfigured"
for port in "${REDIS_NODE_PORTS[@]}"; do
  has "$work/misconf.err" "127\.0\.0\.1:$port error \(AUTH .*remove it from the URL\)" \
    "node $port's cause and hint are printed without --verbose"
done
if grep -q not-wanted "$work/misconf.err"; then
  fail "the password was printed"
fi
rl misconf2 run --nodes "$unwanted" -k t-misconf -n -E 1 --quiet -- touch "$work/never"
expect_status 69 "run -n -E 1 --quiet with a password the servers do not want: 69, not busy" misconf2
[ -e "$work/never" ] && fail "the command ran without the lock"
rl unreachable run --nodes "redis://127.0.0.1:$dead_port" --key t-misconf --wait 0 -- touch "$work/never"
expect_status 69 "run --wait 0 with its node down" unreachable
rl unreachable2 run --nodes "redis://127.0.0.1:$dead_port" -k t-misconf -w 0.3 -E 1 --quiet -- touch "$work/never"
expect_status 69 "run -w 0.3 --quiet -E 1 with its node down: 69, not the conflict status" unreachable2
has "$work/unreachable.err" "no majority of the 1 node\(s\) answered \(1 error\)" "the message says no majority answered"
[ -e "$work/never" ] && fail "the command ran without the lock"
# Without -n or -w, an outage is not a holder: once no majority has answered for the connect
# timeout (1 s), redlock stops waiting, within about two of them; a minority answering is
# still an outage.
dead_port2=$(_redis_free_port)
while [ "$dead_port2" = "$dead_port" ]; do dead_port2=$(_redis_free_port); done
outage_nodes="redis://127.0.0.1:$dead_port,redis://127.0.0.1:$dead_port2,redis://127.0.0.1:${REDIS_NODE_PORTS[0]}"
# A --fair run waits in one acquire and finds the outage beside it.
for case in "1 redis://127.0.0.1:$dead_port" "3 $outage_nodes" "1 --fair redis://127.0.0.1:$dead_port" \
  "3 --fair $outage_nodes"; do
  count=${case%% *}
  fair=""
  [[ "$case" == *--fair* ]] && fair=--fair
  started=$(now_ms)
  status=0
  timeout -k 5 15 "$bin" run ${fair:+"$fair"} --nodes "${case##* }" -k t-outage -- touch "$work/never" \
    >"$work/outage.out" 2>"$work/outage.err" || status=$?
  elapsed=$(($(now_ms) - started))
  expect_status 69 "run ${fair:+$fair }without -w, $count node(s), no majority reachable" outage
  if ((elapsed >= 1000 && elapsed < 5000)); then
    pass "it waited the connect timeout, then stopped ($elapsed ms)"
  else
    fail "it stopped after $elapsed ms, not within 1 to 5 s"
  fi
  has "$work/outage.err" "no majority of the $count node\(s\) answered \(([0-9]+ ok, )?[0-9]+ error\)" \
    "the message says no majority answered"
done
[ -e "$work/never" ] && fail "the command ran without the lock"

echo "== elect: a leader runs its command with its term, then resigns"
# The published leader of election $2 on node $1: a hash {owner, term, version, value}.
published() { redis-cli -p "${REDIS_NODE_PORTS[$1]}" hget "redlock:leader:$2" "$3" | tr -d '\r'; }
# A REDLOCK_TERM of redlock's own environment is replaced by the leader's term.
REDLOCK_TERM=stale rl el1 elect --nodes "$nodes" t-elect alpha -- sh -c \
  'echo "$REDLOCK_TERM"; redis-cli -p "$1" hmget "redlock:leader:t-elect" term value' \
  sh "${REDIS_NODE_PORTS[0]}"
expect_status 0 "elect NAME PROPOSAL -- COMMAND" el1
mapfile -t el1 < <(tr -d '\r' <"$work/el1.out")
if [[ ${el1[0]:-} =~ ^[1-9][0-9]*$ ]] && [ "${el1[1]:-}" = "${el1[0]}" ] && [ "${el1[2]:-}" = alpha ]; then
  pass "the command ran as the leader: REDLOCK_TERM=${el1[0]}, published with its term and PROPOSAL"
else
  fail "the command saw REDLOCK_TERM and the published leader as: ${el1[*]}"
fi
for idx in 0 1 2; do
  left=$(redis-cli -p "${REDIS_NODE_PORTS[$idx]}" exists t-elect "redlock:leader:t-elect" | tr -d '\r')
  [ "$left" = 0 ] || fail "node $idx still has $left of the lock and its leader after the command ended"
done
pass "the leader resigned when its command ended"
rl el2 elect --nodes "$nodes" t-elect alpha -- sh -c 'exit 7'
expect_status 7 "elect exits with the command's status" el2
rl el3 elect --nodes "$nodes" t-elect alpha -- /nonexistent/command
expect_status 127 "elect with a command that does not exist gives 127" el3

echo "== elect: a second candidate waits in line and leads after the first, in a greater term"
# The command records its term beside its pid file ($1), then holds until released.
hold_leading='echo "$REDLOCK_TERM" >"$1.term"; '"$hold"
start_redlock ec1 elect --nodes "$nodes" t-elect2 first -- "$hold_leading"
ec1=$holder
wait_file "$work/ec1.pid"
start_redlock ec2 elect --nodes "$nodes" t-elect2 second -- "$hold_leading"
ec2=$holder
wait_queued t-elect2 2 # the leader keeps its own entry at the head
rl ecnb elect -n --nodes "$nodes" t-elect2 third -- touch "$work/never"
expect_status 1 "elect -n while another candidate leads" ecnb
has "$work/ecnb.err" "did not lead 't-elect2' \(after [0-9]+ ms\): another candidate leads or waits ahead" \
  "the message says another candidate leads"
rl ecw elect -w 0.3 -E 75 --nodes "$nodes" t-elect2 third -- touch "$work/never"
expect_status 75 "elect -w 0.3 -E 75 while another candidate leads" ecw
"$bin" elect --nodes "$nodes" t-elect2 third -- touch "$work/never" >"$work/ecint.out" \
  2>"$work/ecint.err" &
ecint=$!
background+=("$ecint")
wait_queued t-elect2 3
kill -TERM "$ecint"
wait_exit "$ecint"
expect_status 143 "a waiting candidate interrupted by SIGTERM" ecint
has "$work/ecint.err" "interrupted by SIGTERM while campaigning for 't-elect2'" "the message says so"
wait_queued t-elect2 2
pass "the interrupted candidate left the queue"
if [ "$(published 0 t-elect2 value)" = first ] && [ ! -e "$work/ec2.pid" ]; then
  pass "the first candidate leads, the second waits"
else
  fail "the first candidate should lead alone: published '$(published 0 t-elect2 value)'"
fi
: >"$work/ec1.release"
wait_exit "$ec1"
expect_status 0 "the first leader's command ended" ec1
wait_file "$work/ec2.pid"
: >"$work/ec2.release"
wait_exit "$ec2"
expect_status 0 "the second leader's command ended" ec2
term1=$(<"$work/ec1.pid.term")
term2=$(<"$work/ec2.pid.term")
if [[ $term1 =~ ^[0-9]+$ && $term2 =~ ^[0-9]+$ ]] && ((term2 > term1)); then
  pass "the second leader's term ($term2) is greater than the first's ($term1)"
else
  fail "terms did not grow: first '$term1', second '$term2'"
fi
[ -e "$work/never" ] && fail "a candidate that did not lead ran its command"

echo "== elect: a lost leadership stops the command (exit 3)"
start_redlock elost elect --nodes "$nodes" --expiry 1s t-elect-lost x -- "$hold_term"
elost=$holder
wait_file "$work/elost.pid"
redis-cli -p "${REDIS_NODE_PORTS[0]}" del t-elect-lost >/dev/null
redis-cli -p "${REDIS_NODE_PORTS[1]}" del t-elect-lost >/dev/null
wait_exit "$elost" 10
expect_status 3 "elect exits 3 after the lock was deleted on 2 of 3 nodes" elost
has "$work/elost.done" "^TERM$" "the command got SIGTERM"
has "$work/elost.err" "leadership of 't-elect-lost' lost while 'sh' ran; sending SIGTERM" \
  "the message says the leadership was lost"

# wait_published NAME VALUE: until node 0 names VALUE as the leader of NAME.
wait_published() {
  local deadline=$(($(now_ms) + 10000))
  until [ "$(published 0 "$1" value)" = "$2" ]; do
    (($(now_ms) < deadline)) || die "node 0 does not name '$2' the leader of '$1'"
    sleep 0.02
  done
}
"$bin" elect --nodes "$nodes" --expiry 1s t-elect-lost2 solo >"$work/elost2.out" \
  2>"$work/elost2.err" &
elost2=$!
background+=("$elost2")
wait_published t-elect-lost2 solo
redis-cli -p "${REDIS_NODE_PORTS[0]}" del t-elect-lost2 >/dev/null
redis-cli -p "${REDIS_NODE_PORTS[1]}" del t-elect-lost2 >/dev/null
wait_exit "$elost2" 10
expect_status 3 "elect without a command exits 3 when its leadership is lost" elost2
has "$work/elost2.err" "leadership of 't-elect-lost2' lost$" "the message says the leadership was lost"

echo "== elect -l: the leader at once, then each change"
# wait_last_line FILE REGEX: until the last line of FILE matches.
wait_last_line() {
  local deadline=$(($(now_ms) + 10000))
  until tail -n 1 "$1" 2>/dev/null | grep -Eq -- "$2"; do
    (($(now_ms) < deadline)) || die "the last line of $(basename "$1") is not /$2/: $(tail -n 3 "$1" | tr '\n' '|')"
    sleep 0.02
  done
}
"$bin" elect --nodes "$nodes" --listen=t-elect3 >"$work/listen.out" 2>"$work/listen.err" &
listener=$!
background+=("$listener")
wait_last_line "$work/listen.out" '^-$'
pass "elect -l prints - while nobody leads"
start_redlock el3a elect --nodes "$nodes" t-elect3 'one two' -- "$hold"
el3a=$holder
wait_last_line "$work/listen.out" '^[0-9]+ one two$'
start_redlock el3b elect --nodes "$nodes" t-elect3 $'b\\\n' -- "$hold"
el3b=$holder
wait_queued t-elect3 2
: >"$work/el3a.release"
wait_exit "$el3a"
wait_last_line "$work/listen.out" '^[0-9]+ b\\\\\\x0a$'
pass "elect -l prints the next leader, its value's bytes escaped"
: >"$work/el3b.release"
wait_exit "$el3b"
wait_last_line "$work/listen.out" '^-$'
# A leader without a command leads until SIGTERM, then resigns and exits 0.
"$bin" elect --nodes "$nodes" t-elect3 solo >"$work/solo.out" 2>"$work/solo.err" &
solo=$!
background+=("$solo")
wait_last_line "$work/listen.out" '^[0-9]+ solo$'
kill -TERM "$solo"
wait_exit "$solo"
expect_status 0 "elect without a command exits 0 on SIGTERM" solo
wait_last_line "$work/listen.out" '^-$'
pass "the leader without a command resigned on SIGTERM"
kill -TERM "$listener"
wait_exit "$listener"
expect_status 0 "elect -l exits 0 on SIGTERM" listen
# Each leader once, in order, with growing terms; "-" between them where nobody led for a
# moment (a new leader publishes after its grant).
mapfile -t lines <"$work/listen.out"
leaders=() terms=()
for line in "${lines[@]}"; do
  [ "$line" = - ] && continue
  terms+=("${line%% *}")
  leaders+=("${line#* }")
done
if [ "${lines[0]}" = - ] && [ "${#leaders[@]}" = 3 ] && [ "${leaders[0]}" = "one two" ] &&
  [ "${leaders[1]}" = 'b\\\x0a' ] && [ "${leaders[2]}" = solo ] &&
  ((terms[0] < terms[1] && terms[1] < terms[2])); then
  pass "elect -l printed each leader once, in order, with growing terms: $(tr '\n' '|' <"$work/listen.out")"
else
  fail "elect -l printed: $(tr '\n' '|' <"$work/listen.out")"
fi

echo "== elect: the nodes cannot be reached (exit 69)"
rl elun elect -n --nodes "redis://127.0.0.1:$dead_port" t-elect4 x -- touch "$work/never"
expect_status 69 "elect -n with its node down" elun
for case in "1 redis://127.0.0.1:$dead_port" "3 $outage_nodes"; do
  count=${case%% *}
  for mode in campaign listen; do
    args=(t-elect4 x -- touch "$work/never")
    [ $mode = listen ] && args=(-l t-elect4)
    started=$(now_ms)
    status=0
    timeout -k 5 15 "$bin" elect --nodes "${case##* }" "${args[@]}" >"$work/eout.out" \
      2>"$work/eout.err" || status=$?
    elapsed=$(($(now_ms) - started))
    expect_status 69 "elect ($mode), $count node(s), no majority reachable" eout
    if ((elapsed >= 1000 && elapsed < 5000)); then
      pass "it waited the connect timeout, then stopped ($elapsed ms)"
    else
      fail "it stopped after $elapsed ms, not within 1 to 5 s"
    fi
    has "$work/eout.err" "no majority of the $count node\(s\) answered" "the message says no majority answered"
  done
done
[ -s "$work/eout.out" ] && fail "elect -l printed a leader without a majority of the nodes"
[ -e "$work/never" ] && fail "the command ran without leading"

echo "== node lists: a comma before a scheme starts the next node"
sentinels="redis-sentinel://127.0.0.1:$dead_port,127.0.0.1:$dead_port/m"
rl sentinel_list status --nodes "$sentinels,$nodes" --timeout 300ms t-none
expect_status 1 "status with a Sentinel node that cannot be reached" sentinel_list
has "$work/sentinel_list.out" "^t-none: .* of 4 nodes" "one Sentinel URL with two Sentinels and three servers make four nodes"
has "$work/sentinel_list.out" "^  redis-sentinel://127\.0\.0\.1:$dead_port,127\.0\.0\.1:$dead_port/m +error: no Sentinel of .* named the master 'm'" \
  "the Sentinel node's line says no Sentinel named the master"

echo "== status: reentrant, other types, unreadable nodes, secrets"
for idx in 0 1; do
  redis-cli -p "${REDIS_NODE_PORTS[$idx]}" hset t-hash owner-1 2 >/dev/null
  redis-cli -p "${REDIS_NODE_PORTS[$idx]}" pexpire t-hash 60000 >/dev/null
done
redis-cli -p "${REDIS_NODE_PORTS[2]}" rpush t-hash x >/dev/null
printf 'a\001b' | redis-cli -p "${REDIS_NODE_PORTS[0]}" -x set t-bin >/dev/null
rl hash status --nodes "$nodes" t-hash --key t-bin
expect_status 0 "status of several keys" hash
has "$work/hash.out" "^t-hash: locked by owner-1 on 2 of 3 nodes \(quorum 2\)$" "a reentrant lock on a majority"
has "$work/hash.out" "^  127\.0\.0\.1:${REDIS_NODE_PORTS[0]}  held by owner-1 \(count 2\), ttl [0-9]+ ms$" \
  "a reentrant lock shows its hold count"
has "$work/hash.out" "^  127\.0\.0\.1:${REDIS_NODE_PORTS[2]}  not a lock \(a list\)$" "a key of another type"
has "$work/hash.out" '^  127\.0\.0\.1:[0-9]+  held by a\\x01b, no expiry$' "bytes that are not printable are escaped"
has "$work/hash.out" "^t-bin: not locked \(held on 1, free on 2 of 3 nodes; quorum 2\)$" "held on a minority"
rl dead status --nodes "$nodes,redis://127.0.0.1:$dead_port" t-hash
expect_status 1 "status with an unreachable node" dead
has "$work/dead.out" "^  127\.0\.0\.1:$dead_port +error: connect to 127\.0\.0\.1:$dead_port failed: Connection refused$" "the node's line says why"
rl secret status --nodes "redis://:s3cret@127.0.0.1:${REDIS_NODE_PORTS[0]}" t-hash
expect_status 1 "status with a password the server does not want" secret
has "$work/secret.out" "error: AUTH on 127\.0\.0\.1:[0-9]+ failed: .*remove it from the URL" "the AUTH failure is reported with its hint"
if grep -q s3cret "$work/secret.out" "$work/secret.err"; then
  fail "status printed the password"
else
  pass "status does not print the password"
fi
rl secret2 run --nodes "redis://:s3cret@127.0.0.1:${REDIS_NODE_PORTS[0]}" --key t-x --verbose -- true
expect_status 69 "run with a password the server does not want" secret2
if grep -q s3cret "$work/secret2.out" "$work/secret2.err"; then
  fail "run printed the password"
else
  pass "run does not print the password"
fi

echo "== TLS: rediss:// nodes"
if ! command -v openssl >/dev/null; then
  echo "skipped: no openssl command to make test certificates"
else
  tls=$work/tls
  mkdir -p "$tls"
  (
    cd "$tls" && printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout ca.key -out ca.crt -days 1 -subj /CN=redlock-cli-test-ca &&
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout server.key -out server.csr -subj /CN=127.0.0.1 &&
      openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
        -out server.crt -days 1 -extfile san.ext
  ) >"$work/openssl.log" 2>&1 || die "openssl could not make test certificates: $(tail -3 "$work/openssl.log")"
  plain_port=$(_redis_free_port)
  tls_port=$(_redis_free_port)
  while [ "$tls_port" = "$plain_port" ]; do tls_port=$(_redis_free_port); done
  redis-server --port "$plain_port" --tls-port "$tls_port" --bind 127.0.0.1 \
    --tls-cert-file "$tls/server.crt" --tls-key-file "$tls/server.key" \
    --tls-ca-cert-file "$tls/ca.crt" --tls-auth-clients no --save '' --appendonly no \
    --dir "$tls" --logfile "$tls/redis.log" --pidfile "$tls/redis.pid" --daemonize yes \
    </dev/null >/dev/null 2>&1 || true
  deadline=$(($(now_ms) + 10000))
  until [ "$(redis-cli -p "$plain_port" ping 2>/dev/null)" = PONG ] && [ -s "$tls/redis.pid" ]; do
    (($(now_ms) < deadline)) || die "the TLS redis-server did not come up: $(tail -5 "$tls/redis.log")"
    sleep 0.02
  done
  url=rediss://127.0.0.1:$tls_port

  rl tls1 run --nodes "$url" --tls-ca "$tls/ca.crt" --key t-tls -- \
    sh -c 'redis-cli -p "$1" hkeys t-tls' sh "$plain_port"
  expect_status 0 "run over TLS with --tls-ca" tls1
  has "$work/tls1.out" "^w:[A-Za-z0-9+/=]{16,}$" "the key was set over TLS (seen on the plain port)"
  rl tls2 run --nodes "$url" --tls-ca "$tls/ca.crt" --key t-tls2 -- \
    "$bin" status --nodes "$url" --tls-ca "$tls/ca.crt" t-tls2
  expect_status 0 "status over TLS from inside a run" tls2
  has "$work/tls2.out" "^t-tls2: write-locked by .* \(each on a quorum: 1 of 1 node\)$" \
    "status reads the lock over TLS"
  rl tls3 run --nodes "$url" --key t-tls3 --verbose -- touch "$work/never"
  expect_status 69 "run over TLS without the CA" tls3
  has "$work/tls3.err" "TLS handshake failed" "the report says the handshake failed"
  rl tls4 status --nodes "$url" t-tls3
  expect_status 1 "status over TLS without the CA" tls4
  has "$work/tls4.out" "error: TLS handshake failed: certificate verify failed" "status says why"
  usage_case "--tls-ca: cannot read '/nonexistent/ca.crt'" run --nodes "$url" \
    --tls-ca /nonexistent/ca.crt --key k -- true
  usage_case "--tls-cert and --tls-key go together" status --nodes "$url" \
    --tls-cert "$tls/server.crt" k
  usage_case "no node uses rediss://" run --nodes "$nodes" --tls-ca "$tls/ca.crt" --key k -- true
  usage_case "cannot load the TLS CA file" run --nodes "$url" --tls-ca "$tls/san.ext" --key k -- true
  [ -e "$work/never" ] && fail "a run that could not lock ran its command"
  stop_tls_server
fi

# Last: a replica keeps a copy of its master's keys after it is promoted back.
echo "== status: a replica among the nodes"
p0=${REDIS_NODE_PORTS[0]}
p2=${REDIS_NODE_PORTS[2]}
redis-cli -p "$p0" set t-replica someone px 60000 >/dev/null
redis-cli -p "$p2" replicaof 127.0.0.1 "$p0" >/dev/null
deadline=$(($(now_ms) + 10000))
until [ "$(redis-cli -p "$p2" get t-replica)" = someone ]; do
  (($(now_ms) < deadline)) || die "the replica on port $p2 did not copy its master's key"
  sleep 0.02
done
rl replica status --nodes "$nodes" t-replica
expect_status 0 "status with a replica among the nodes" replica
has "$work/replica.out" "^  127\.0\.0\.1:$p2 +a replica of 127\.0\.0\.1:$p0, not a master: held by someone" \
  "the replica's line says it is a replica and of which master"
has "$work/replica.out" "^t-replica: not locked \(held on 1, free on 1, a replica \(not a master\) on 1 of 3 nodes" \
  "the replica's copy does not count towards the quorum"
redis-cli -p "$p2" replicaof no one >/dev/null

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
