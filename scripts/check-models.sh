#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Model-checks the Promela models in models/ with Spin.
#
#   scripts/check-models.sh
#       Verifies every model at its default sizes and refutes every mutant, as many runs at once
#       as there are cores; prints one line per run, in the table's order (name, states stored,
#       depth reached, seconds, verdict) and exits 0 only if every model verified and every
#       mutant was refuted.
#   scripts/check-models.sh --model NAME [-DMACRO[=VALUE]...]
#       One run of models/NAME.pml with the given macros (model sizes such as -DNODES=5, mutants
#       such as -DMUTANT_SMALL_QUORUM, or pan's own such as -DBITSTATE). Exits 0 when it verifies,
#       1 when Spin finds a violation (printing the trail's summary), 2 on an error.
#   scripts/check-models.sh --large
#       Verifies the models at NODES=5 instead, with bounds, and refutes mutants there (the LARGE
#       table below: the models that finish within 5 minutes; not part of the default run). A
#       bitstate run's line ends with pan's hash factor.
#
# Installs Debian's spin when it is missing (with sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each row: name, model, expected verdict, macros. A model whose file holds an `ltl` formula is
# searched for acceptance cycles under weak fairness (pan -a -f), which also checks its
# assertions, with room for up to 30 processes in pan's fairness counters (-DNFAIR=8); the
# others for safety only. A row (or --model run) that passes -DSAFETY checks only the
# assertions of a model with an `ltl` formula (the model leaves its formula out then): a
# cheaper search for sizes whose liveness search would not fit.
# A mutant that needs more than the default sizes to show names them here.
RUNS=(
  "mutex                        mutex     verified"
  "mutex.small_quorum           mutex     violation -DMUTANT_SMALL_QUORUM"
  "mutex.restart_at_once        mutex     violation -DMUTANT_RESTART_AT_ONCE -DFAULTS=1"
  "mutex.no_drift               mutex     violation -DMUTANT_NO_DRIFT"
  "mutex.validity_from_reply    mutex     violation -DMUTANT_VALIDITY_FROM_REPLY"
  "mutex.no_cleanup             mutex     violation -DMUTANT_NO_CLEANUP"
  "mutex.cleanup_granted        mutex     violation -DMUTANT_CLEANUP_GRANTED -DFAULTS=1"
  "mutex.unchecked_delete       mutex     violation -DMUTANT_UNCHECKED_DELETE"
  "mutex.unchecked_extend       mutex     violation -DMUTANT_UNCHECKED_EXTEND"
  "fencing                      fencing   verified"
  "fencing.small_quorum         fencing   violation -DMUTANT_SMALL_QUORUM"
  "fencing.no_write_back        fencing   violation -DMUTANT_NO_WRITE_BACK"
  "fencing.unconfirmed          fencing   violation -DMUTANT_UNCONFIRMED"
  "fencing.min_token            fencing   violation -DMUTANT_MIN_TOKEN -DATTEMPTS=3"
  "fencing.raise_lowers         fencing   violation -DMUTANT_RAISE_LOWERS -DATTEMPTS=3"
  "fencing.counter_from_zero    fencing   violation -DMUTANT_COUNTER_FROM_ZERO"
  "fencing.raise_from_zero      fencing   violation -DMUTANT_RAISE_FROM_ZERO -DATTEMPTS=3"
  "semaphore                    semaphore verified"
  "semaphore.one_permit         semaphore verified  -DPERMITS=1 -DEXPIRY=2 -DDRIFT=1 -DFAULTS=1"
  "semaphore.majority           semaphore violation -DMUTANT_MAJORITY"
  "semaphore.small_quorum       semaphore violation -DMUTANT_SMALL_QUORUM"
  "semaphore.restart_at_once    semaphore violation -DMUTANT_RESTART_AT_ONCE -DPERMITS=1 -DFAULTS=1"
  "semaphore.no_cleanup         semaphore violation -DMUTANT_NO_CLEANUP"
  "semaphore.cleanup_granted    semaphore violation -DMUTANT_CLEANUP_GRANTED"
  "semaphore.limit_plus_one     semaphore violation -DMUTANT_LIMIT_PLUS_ONE"
  "semaphore.no_drift           semaphore violation -DMUTANT_NO_DRIFT -DPERMITS=1 -DEXPIRY=2 -DDRIFT=1"
  "semaphore.validity_from_reply semaphore violation -DMUTANT_VALIDITY_FROM_REPLY"
  "semaphore.release_any        semaphore violation -DMUTANT_RELEASE_ANY -DATTEMPTS=2 -DPERMITS=1"
  "semaphore.extend_expired     semaphore violation -DMUTANT_EXTEND_EXPIRED -DPERMITS=1 -DEXPIRY=2 -DEXTEND=1"
  "rw                           rw        verified"
  "rw.drift                     rw        verified  -DEXPIRY=2 -DDRIFT=1"
  "rw.two_writers               rw        verified  -DWRITERS=2 -DATTEMPTS=1 -DTRIES=1"
  "rw.small_quorum              rw        violation -DMUTANT_SMALL_QUORUM"
  "rw.restart_at_once           rw        violation -DMUTANT_RESTART_AT_ONCE -DFAULTS=1"
  "rw.no_drift                  rw        violation -DMUTANT_NO_DRIFT -DEXPIRY=2 -DDRIFT=1"
  "rw.no_cleanup                rw        violation -DMUTANT_NO_CLEANUP"
  "rw.reader_ignores_writer     rw        violation -DMUTANT_READER_IGNORES_WRITER"
  "rw.reader_ignores_intent     rw        violation -DMUTANT_READER_IGNORES_INTENT"
  "rw.writer_ignores_readers    rw        violation -DMUTANT_WRITER_IGNORES_READERS"
  "rw.keep_intent               rw        violation -DMUTANT_KEEP_INTENT"
  "rw.extend_expired            rw        violation -DMUTANT_EXTEND_EXPIRED -DEXPIRY=2 -DEXTEND=1"
  "fair                         fair      verified"
  "fair.small_quorum            fair      violation -DMUTANT_SMALL_QUORUM -DFAULTS=1"
  "fair.no_stamp_check          fair      violation -DMUTANT_NO_STAMP_CHECK -DACQS=2 -DFAULTS=2"
  "fair.validity_from_heard     fair      violation -DMUTANT_VALIDITY_FROM_HEARD -DACQS=2 -DFAULTS=2"
  "fair.any_waiter              fair      violation -DMUTANT_ANY_WAITER -DCLIENTS=3"
  "fair.min_ticket              fair      violation -DMUTANT_MIN_TICKET"
  "fair.pending_passes          fair      violation -DMUTANT_PENDING_PASSES"
  "fair.no_cleanup              fair      violation -DMUTANT_NO_CLEANUP"
  "fair.wait_forever            fair      violation -DMUTANT_WAIT_FOREVER -DFAULTS=1"
  "waiters                      waiters   verified"
  "waiters.two_acquisitions     waiters   verified  -DCLIENTS=2 -DACQS=2"
  "waiters.no_fallback          waiters   violation -DMUTANT_NO_FALLBACK"
  "waiters.grant_by_name        waiters   violation -DMUTANT_GRANT_BY_NAME"
  "waiters.wake_all             waiters   violation -DMUTANT_WAKE_ALL"
  "waiters.no_pass_over         waiters   violation -DMUTANT_NO_PASS_OVER"
  "waiters.name_unheard         waiters   violation -DMUTANT_NAME_UNHEARD"
  "election                     election  verified"
  "election.crash               election  verified  -DCRASHES=1 -DREADER=0"
  "election.drift               election  verified  -DEXPIRY=2 -DDRIFT=1 -DREADER=0"
  "election.pipelined           election  verified  -DQCAP=2 -DREADER=0"
  "election.loss                election  verified  -DLOSSES=1 -DREADER=0"
  "election.small_quorum        election  violation -DMUTANT_SMALL_QUORUM"
  "election.reader_quorum       election  violation -DMUTANT_READER_QUORUM"
  "election.unchecked_publish   election  violation -DMUTANT_UNCHECKED_PUBLISH"
  "election.no_write_back       election  violation -DMUTANT_NO_WRITE_BACK"
  "election.min_term            election  violation -DMUTANT_MIN_TERM"
  "election.restart_at_once     election  violation -DMUTANT_RESTART_AT_ONCE -DCRASHES=1 -DREADER=0"
  "election.no_drift            election  violation -DMUTANT_NO_DRIFT -DEXPIRY=2 -DDRIFT=1 -DREADER=0"
  "election.reader_no_key       election  violation -DMUTANT_READER_NO_KEY"
  "election.unchecked_resign    election  violation -DMUTANT_UNCHECKED_RESIGN"
  "election.publish_no_raise    election  violation -DMUTANT_PUBLISH_NO_RAISE -DLOSSES=1 -DREADER=0"
)

# The NODES=5 verifications of --large, in the same form, each with bounds that let it finish
# within 5 minutes (docs/safety.md, "Model checking"), and mutants that show the bounds still
# let the search see a broken rule. -DCOLLAPSE: an exhaustive search that stores the states
# compressed (lossless). -DBITSTATE: bitstate hashing (two hash functions over 2^30 bits),
# which may miss states; its hash factor (bits per state stored) says how likely: above 100,
# pan expects every state to have been reached.
LARGE=(
  "mutex.nodes5                 mutex     verified  -DNODES=5 -DATTEMPTS=1 -DEXTENDS=0 -DCOLLAPSE"
  "mutex.nodes5.small_quorum    mutex     violation -DNODES=5 -DATTEMPTS=1 -DEXTENDS=0 -DCOLLAPSE -DMUTANT_SMALL_QUORUM"
  "mutex.nodes5.no_drift        mutex     violation -DNODES=5 -DATTEMPTS=1 -DEXTENDS=0 -DCOLLAPSE -DMUTANT_NO_DRIFT"
  "mutex.nodes5.cleanup_granted mutex     violation -DNODES=5 -DATTEMPTS=1 -DEXTENDS=0 -DCOLLAPSE -DMUTANT_CLEANUP_GRANTED"
  "fencing.nodes5               fencing   verified  -DNODES=5 -DSERIAL -DNO_REFUSALS -DCOLLAPSE"
  "fencing.nodes5.small_quorum  fencing   violation -DNODES=5 -DSERIAL -DNO_REFUSALS -DCOLLAPSE -DMUTANT_SMALL_QUORUM"
  "fencing.nodes5.no_write_back fencing   violation -DNODES=5 -DSERIAL -DNO_REFUSALS -DCOLLAPSE -DMUTANT_NO_WRITE_BACK"
  "fencing.nodes5.unconfirmed   fencing   violation -DNODES=5 -DSERIAL -DNO_REFUSALS -DCOLLAPSE -DMUTANT_UNCONFIRMED"
  "fencing.nodes5.counter_from_zero fencing violation -DNODES=5 -DSERIAL -DNO_REFUSALS -DCOLLAPSE -DMUTANT_COUNTER_FROM_ZERO"
  "rw.nodes5                    rw        verified  -DNODES=5 -DATTEMPTS=1 -DBITSTATE"
  "rw.nodes5.small_quorum       rw        violation -DNODES=5 -DATTEMPTS=1 -DBITSTATE -DMUTANT_SMALL_QUORUM"
  "election.nodes5              election  verified  -DNODES=5 -DATTEMPTS=1 -DCOLLAPSE"
  "election.nodes5.reader_quorum election violation -DNODES=5 -DATTEMPTS=1 -DCOLLAPSE -DMUTANT_READER_QUORUM"
  "election.nodes5.reader_no_key election violation -DNODES=5 -DATTEMPTS=1 -DCOLLAPSE -DMUTANT_READER_NO_KEY"
)

install_spin() {
  command -v spin >/dev/null && return 0
  local sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq spin >/dev/null
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs models/$1.pml with the macros $3... in a directory of its own under $work/$2. Sets
# states, depth, seconds and verdict (verified, violation or error). Spin's and pan's output
# stays in that directory (spin.log, cc.log, pan.log).
run_model() {
  local model=$1 dir=$work/$2
  shift 2
  states=- depth=- seconds=- verdict=error coverage=
  mkdir -p "$dir"
  if [ ! -f "models/$model.pml" ]; then
    echo "no model models/$model.pml" >"$dir/pan.log"
    return
  fi
  cp "models/$model.pml" "$dir/"
  local pan_flags=(-n -m1000000) cc_flags=(-O2 -w "-DMEMLIM=4096")
  if grep -q '^ltl ' "models/$model.pml" && [[ " $* " != *" -DSAFETY "* ]]; then
    pan_flags+=(-a -f)
    cc_flags+=(-DNFAIR=8)
  else
    cc_flags+=(-DSAFETY)
  fi
  local macro
  for macro in "$@"; do
    # pan stops at the first violation; with bitstate hashing it searches with two hash
    # functions over a 2^30-bit table.
    [ "$macro" = -DBITSTATE ] && pan_flags+=(-k2 -w30)
  done
  (
    cd "$dir"
    spin -a "$@" "$model.pml" >spin.log 2>&1 || exit 2
    gcc "${cc_flags[@]}" "$@" -o pan pan.c >cc.log 2>&1 || exit 2
    ./pan "${pan_flags[@]}" >pan.log 2>&1 || true
  ) || {
    cat "$dir/spin.log" "$dir/cc.log" >"$dir/pan.log" 2>/dev/null
    return
  }
  local log=$dir/pan.log
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$log" | head -n1)
  depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$log" | head -n1)
  seconds=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' "$log" | head -n1)
  local errors
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | head -n1)
  if [ -z "$errors" ] || [ -z "$states" ]; then
    verdict=error
  elif [ "$errors" -gt 0 ]; then
    verdict=violation
  elif grep -q 'max search depth too small\|Search not completed' "$log"; then
    verdict=error   # the search was cut short (depth or memory): nothing was proven
  else
    verdict=verified
  fi
  [ -n "$seconds" ] || seconds=0
  local factor
  factor=$(sed -n 's/^hash factor: \([0-9.e+]*\).*/\1/p' "$log" | head -n1)
  [ -z "$factor" ] || coverage="  (bitstate, hash factor $factor)"
}

# The trail's summary: what was violated and the steps' printf lines that led to it.
trail_summary() {
  local model=$1 dir=$work/$2
  shift 2
  grep -E '^pan:[0-9]+:|^pan: ' "$dir/pan.log" | grep -v 'elapsed time\|rate ' || true
  if [ -f "$dir/$model.pml.trail" ]; then
    (cd "$dir" && spin -t "$@" "$model.pml" 2>&1) | grep -v '^ *$' | tail -n 40
  fi
}

install_spin

rows=("${RUNS[@]}")
if [ $# -eq 1 ] && [ "$1" = --large ]; then
  rows=("${LARGE[@]}")
  shift
fi
if [ $# -gt 0 ]; then
  if [ "$1" != --model ] || [ $# -lt 2 ]; then
    echo "usage: $0 [--large | --model NAME [-DMACRO[=VALUE]...]]" >&2
    exit 2
  fi
  model=$2
  shift 2
  for macro in "$@"; do
    case $macro in
      -D*) ;;
      *) echo "not a macro: $macro" >&2; exit 2 ;;
    esac
  done
  run_model "$model" one "$@"
  printf '%s %s states, depth %s, %s s: %s%s\n' "$model $*" "$states" "$depth" "$seconds" "$verdict" \
    "$coverage"
  case $verdict in
    verified) exit 0 ;;
    violation) trail_summary "$model" one "$@"; exit 1 ;;
    *) cat "$work/one/pan.log" >&2; exit 2 ;;
  esac
fi

# One row, in a directory of its own: its line, and what went wrong when it did not go as
# expected, in $work/$name.out; $work/$name.unexpected when it did not.
check_row() {
  local fields name model expected macros mark=
  read -r -a fields <<<"$1"
  name=${fields[0]} model=${fields[1]} expected=${fields[2]}
  macros=("${fields[@]:3}")
  run_model "$model" "$name" ${macros[@]+"${macros[@]}"}
  [ "$verdict" = "$expected" ] || mark="  (expected $expected)"
  {
    printf '%-30s %12s %8s %9s  %s%s%s\n' "$name" "$states" "$depth" "$seconds" "$verdict" \
      "$coverage" "$mark"
    if [ -n "$mark" ]; then
      if [ "$verdict" = violation ]; then
        trail_summary "$model" "$name" ${macros[@]+"${macros[@]}"} | sed 's/^/    /'
      else
        tail -n 20 "$work/$name/pan.log" | sed 's/^/    /'
      fi
    fi
  } >"$work/$name.out"
  [ -z "$mark" ] || touch "$work/$name.unexpected"
}

# The rows run side by side, one per core (each search is single-threaded and independent),
# and print in their order.
cores=$(nproc)
for row in "${rows[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do
    wait -n || true
  done
  check_row "$row" &
done
wait || true
failed=0
printf '%-30s %12s %8s %9s  %s\n' name states depth seconds verdict
for row in "${rows[@]}"; do
  name=${row%% *}
  if [ -f "$work/$name.out" ]; then
    cat "$work/$name.out"
  else
    printf '%-30s no result (its run failed)\n' "$name"
    failed=1
  fi
  [ ! -e "$work/$name.unexpected" ] || failed=1
done
exit $failed
