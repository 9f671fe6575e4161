# SPDX-License-Identifier: BSL-1.0
# shellcheck shell=bash
# Throwaway redis-server processes for the demo and the example tests. Source it, then:
#
#   trap redis_nodes_stop EXIT    # first, so that a failed start is cleaned up too
#   redis_nodes_start 5           # fills REDIS_NODE_PORTS and REDIS_NODE_URLS
#   ...
#   redis_nodes_stop              # idempotent; also runs from the trap
#
# Each server listens on 127.0.0.1 only, on a port that was free when it started (never a fixed
# one), keeps nothing on disk (--save '' --appendonly no) and has its own temp dir holding its
# log and pid file. redis_nodes_stop stops exactly those servers and removes their dirs.
# Needs redis-server and redis-cli; python3 is used to find free ports when present.

REDIS_NODE_PORTS=()
REDIS_NODE_URLS=()
_redis_node_dirs=()
_redis_node_pids=()

# A loopback port nothing listens on now: the kernel's pick for port 0, or else a random probe.
_redis_free_port() {
  if command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null; then
    return 0
  fi
  local port i
  for ((i = 0; i < 200; i++)); do
    port=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "redis-nodes: no free loopback port found" >&2
  return 1
}

# True while $1 is a live redis-server (a pid file may outlive its server, and pids get reused).
_redis_node_pid_alive() {
  [ -n "$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = redis-server ]
}

# Starts one server in a new temp dir; retries on another port if the port was taken meanwhile.
_redis_node_start_one() {
  local dir port pid deadline answer
  dir=$(mktemp -d "${TMPDIR:-/tmp}/redlock-node-XXXXXX")
  _redis_node_dirs+=("$dir")
  for _ in 1 2 3 4 5; do
    port=$(_redis_free_port) || return 1
    # Our own servers are up already; the kernel may hand out a port twice in a row.
    if [[ " ${REDIS_NODE_PORTS[*]} " == *" $port "* ]]; then
      continue
    fi
    rm -f "$dir/redis.pid"
    : >"$dir/redis.log"
    # shellcheck disable=SC2094  # redis-server appends to its log itself; both use O_APPEND
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" \
      --daemonize yes </dev/null >>"$dir/redis.log" 2>&1 || true
    # Ready when it answers PING and INFO names the pid from its pid file: a PONG alone might
    # come from someone else's server that grabbed the port first.
    deadline=$((SECONDS + 10))
    pid=
    while ((SECONDS < deadline)); do
      [ -z "$pid" ] && [ -s "$dir/redis.pid" ] && pid=$(<"$dir/redis.pid")
      if [ -n "$pid" ]; then
        answer=$(redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' |
          sed -n 's/^process_id://p') || true
        if [ "$answer" = "$pid" ]; then
          _redis_node_pids+=("$pid")
          REDIS_NODE_PORTS+=("$port")
          REDIS_NODE_URLS+=("redis://127.0.0.1:$port")
          return 0
        fi
        _redis_node_pid_alive "$pid" || break
      elif grep -q -e "Address already in use" -e "Could not create server TCP" "$dir/redis.log"; then
        break
      fi
      sleep 0.05
    done
    if _redis_node_pid_alive "$pid"; then  # started but never answered: give up on it
      _redis_node_pids+=("$pid")
      break
    fi
    grep -q -e "Address already in use" "$dir/redis.log" || break
    echo "redis-nodes: port $port was taken, trying another" >&2
  done
  echo "redis-nodes: redis-server on port $port did not come up; its log ($dir/redis.log):" >&2
  tail -n 20 "$dir/redis.log" >&2 || true
  return 1
}

# redis_nodes_start N: starts N servers (adding to any already started).
redis_nodes_start() {
  local n=${1:?redis_nodes_start needs a count}
  local i
  command -v redis-server >/dev/null || {
    echo "redis-nodes: redis-server not found (scripts/setup.sh installs it)" >&2
    return 1
  }
  command -v redis-cli >/dev/null || {
    echo "redis-nodes: redis-cli not found (scripts/setup.sh installs it)" >&2
    return 1
  }
  for ((i = 0; i < n; i++)); do
    _redis_node_start_one || return 1
  done
  echo "redis-nodes: started $n redis-server(s) on ports ${REDIS_NODE_PORTS[*]}" >&2
}

# Stops every server started here (SIGTERM, then SIGKILL after 5 s) and removes their dirs.
redis_nodes_stop() {
  local pid dir deadline
  local pids=("${_redis_node_pids[@]}")
  for dir in "${_redis_node_dirs[@]}"; do  # also a server that started but never answered
    [ -s "$dir/redis.pid" ] && pids+=("$(<"$dir/redis.pid")")
  done
  for pid in "${pids[@]}"; do
    _redis_node_pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null
  done
  deadline=$((SECONDS + 5))
  for pid in "${pids[@]}"; do
    while _redis_node_pid_alive "$pid" && ((SECONDS < deadline)); do
      sleep 0.05
    done
    if _redis_node_pid_alive "$pid"; then
      echo "redis-nodes: redis-server $pid ignored SIGTERM; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for dir in "${_redis_node_dirs[@]}"; do
    rm -rf "$dir"
  done
  _redis_node_pids=()
  _redis_node_dirs=()
  REDIS_NODE_PORTS=()
  REDIS_NODE_URLS=()
  return 0
}
