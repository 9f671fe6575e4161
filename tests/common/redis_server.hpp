// SPDX-License-Identifier: BSL-1.0
#pragma once

// Real redis-server processes for tests. Every server runs on 127.0.0.1 only, on a port picked
// at start, in its own temp dir, and dies with the test process (PR_SET_PDEATHSIG).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisReply;

namespace redlock::test {

// PEM files for servers that speak TLS (see redis_server::cluster_node).
struct tls_files
{
    std::string cert_file;  // the server's certificate, also its client certificate on the bus
    std::string key_file;
    std::string ca_file;  // trusted by the servers (bus, replication) and by redis-cli
};

class redis_server
{
  public:
    // extra_args go last so they override the defaults (e.g. "--appendonly", "yes").
    // extra_env ("NAME=value") is added to this server's environment only, e.g. LD_PRELOAD and
    // FAKETIME for a skewed clock on one node. Throws std::runtime_error (with the log tail)
    // if the server does not answer PING within 5 s.
    explicit redis_server(std::vector<std::string> extra_args = {},
                          std::vector<std::string> extra_env = {});

    // A Sentinel (`redis-server FILE --sentinel`, its config file writable in its dir) that
    // monitors the master `name` at 127.0.0.1:master_port with `quorum`, declaring it down
    // after `down_after` without replies.
    static std::unique_ptr<redis_server> sentinel(const std::string& name,
                                                  std::uint16_t master_port, int quorum,
                                                  std::chrono::milliseconds down_after);
    // A cluster-enabled server, not yet part of any cluster (see cluster_deployment), on a port
    // P <= 55535 whose cluster bus port P+10000 was free too. nodes.conf lives in its dir, so
    // restart() keeps the node's identity. extra_args go last, as above.
    // With `tls`, the server listens on a TLS port too (tls_port(); port() stays plain, for the
    // harness's own commands), with `--tls-cluster yes --tls-replication yes` and
    // `--tls-auth-clients no`; its cluster bus is on `--cluster-port` tls_port() + 10000, which
    // was free (so an extra `--tls-cluster no` keeps a known bus port).
    static std::unique_ptr<redis_server> cluster_node(std::vector<std::string> extra_args = {},
                                                      std::optional<tls_files> tls = {});
    ~redis_server();
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    std::uint16_t port() const { return port_; }
    std::uint16_t tls_port() const { return tls_port_; }  // 0 without TLS
    std::string url() const;
    pid_t pid() const { return pid_; }
    const std::string& dir() const { return dir_; }  // holds redis.log

    void pause();    // SIGSTOP; returns once the process is stopped. No-op if paused or dead.
    void resume();   // SIGCONT. No-op if dead.
    void kill();     // SIGKILL + waitpid. Idempotent.
    void restart();  // kill, then start again on the same port and dir.
    bool running() const;
    bool paused() const { return paused_ && running(); }

    // For a server with a TLS port: runs `redis-cli --tls --cacert CA -h 127.0.0.1
    // -p tls_port() args...` (bounded, 5 s) and returns what it printed (raw, as redis-cli prints
    // when not on a terminal), its non-empty lines joined by single spaces: an integer as digits,
    // an array's elements in order, nil as "", an error reply as its text. Throws
    // std::logic_error without a TLS port, std::runtime_error if redis-cli fails or times out.
    std::string tls_command(const std::vector<std::string>& args) const;

  private:
    struct sentinel_config
    {
        std::string text;
    };
    explicit redis_server(sentinel_config config);
    struct cluster_config
    {
        std::vector<std::string> extra_args;
        std::optional<tls_files> tls;
    };
    explicit redis_server(cluster_config config);
    void start_on_a_free_port();
    bool start();  // false if the port was taken; throws on any other failure

    std::vector<std::string> args_;
    std::vector<std::string> env_;
    std::string dir_;
    std::uint16_t port_ = 0;
    mutable pid_t pid_ = -1;  // running() reaps a server that died on its own
    bool paused_ = false;
    // For a Sentinel: the config file's first text (Sentinel rewrites the file as it runs).
    std::string sentinel_config_;
    bool cluster_bus_ = false;  // the port must leave room for a free bus port at +10000
    std::optional<tls_files> tls_;
    std::uint16_t tls_port_ = 0;  // with tls_: the bus port is tls_port_ + 10000 instead
};

class redis_cluster
{
  public:
    explicit redis_cluster(std::size_t n, std::vector<std::string> extra_args = {});

    std::size_t size() const { return nodes_.size(); }
    redis_server& operator[](std::size_t i) { return *nodes_.at(i); }
    const redis_server& operator[](std::size_t i) const { return *nodes_.at(i); }
    std::vector<std::string> urls() const;
    // FLUSHALL on every running node. Throws std::logic_error on a paused node rather than
    // silently leaving its keys behind.
    void flushall();

  private:
    std::vector<std::unique_ptr<redis_server>> nodes_;
};

// A real Redis Cluster: `masters` masters, each with `replicas_per_master` replicas, created
// with `redis-cli --cluster create ... --cluster-replicas R --cluster-yes` (which refuses fewer
// than 3 masters: then with the same steps by hand, to the same layout). Server i < masters
// is a master holding an even share of the slots in creation order (master 0 has slot 0);
// replica j of master m is server masters + m * replicas_per_master + j (redis-cli shuffles
// replicas among masters at random; the constructor moves them back). With `tls`, every
// server is a redis_server::cluster_node with TLS (its cluster bus and replication over TLS)
// and redis-cli creates the cluster over the TLS ports (the plain ones if extra_args turn
// tls-cluster off); the harness's own commands (and owner_of_slot's ports) still use the plain
// ports. The constructor
// returns once every node reports cluster_state:ok, all agree on the slot owners and every
// replica's link to its master is up; it throws std::runtime_error with the details otherwise.
// "Running" below means running() and not paused(): a stopped server cannot be asked anything.
class cluster_deployment
{
  public:
    // extra_args go to every server, last (see redis_server::cluster_node).
    explicit cluster_deployment(std::size_t masters, std::size_t replicas_per_master = 0,
                                std::vector<std::string> extra_args = {},
                                std::optional<tls_files> tls = {});

    std::size_t size() const { return nodes_.size(); }  // all servers, masters first
    redis_server& operator[](std::size_t i) { return *nodes_.at(i); }
    const redis_server& operator[](std::size_t i) const { return *nodes_.at(i); }
    // "redis-cluster://127.0.0.1:P1,127.0.0.1:P2,..." with every server as a seed.
    std::string url() const;
    // "rediss-cluster://127.0.0.1:T1,127.0.0.1:T2,..." with every server's TLS port as a seed.
    // Throws std::logic_error for a deployment without TLS.
    std::string tls_url() const;
    // CLUSTER MYID of server i, read at creation (nodes.conf keeps it across restarts).
    std::string node_id(std::size_t i) const { return ids_.at(i); }

    // CLUSTER KEYSLOT computed here: CRC16-XMODEM mod 16384 of the key, or of the text between
    // the first '{' and the next '}' when that text is not empty.
    static std::uint16_t slot_of(std::string_view key);
    // The server that owns `slot` according to CLUSTER SLOTS on the first running server;
    // nullopt if no server of this deployment owns it there. Throws if none is running.
    std::optional<std::size_t> owner_of_slot(std::uint16_t slot) const;

    // Moving a slot by hand, in steps a test can interleave with its own commands. In between,
    // keys already moved answer ASK on `from`; afterwards every master answers MOVED.
    // CLUSTER SETSLOT IMPORTING on `to`, then MIGRATING on `from`.
    void begin_slot_migration(std::uint16_t slot, std::size_t from, std::size_t to);
    // MIGRATE every key of the slot from `from` to `to`, 100 keys per call, until
    // CLUSTER GETKEYSINSLOT on `from` is empty. A key already on `to` is an error (BUSYKEY).
    void migrate_keys(std::uint16_t slot, std::size_t from, std::size_t to);
    // CLUSTER SETSLOT NODE <to's id> on `to`, then on every other running master; returns once
    // every running master reports `to` as the owner (bounded, 15 s).
    void finish_slot_migration(std::uint16_t slot, std::size_t to);

    // After a test killed a master: CLUSTER FAILOVER TAKEOVER on its `replica`, then waits until
    // every running server reports cluster_state:ok and the replica as the owner of the old
    // master's slots (bounded, 15 s). Throws std::runtime_error otherwise.
    void promote_after_master_killed(std::size_t replica);

    // FLUSHALL on every running master (replicas follow). Throws std::logic_error on a paused
    // server rather than silently leaving keys behind.
    void flushall();
    // Blocks until every running server reports cluster_state:ok and all report the same slot
    // owners; throws std::runtime_error with the last disagreement after 15 s.
    void wait_until_ok();

  private:
    std::vector<std::unique_ptr<redis_server>> nodes_;
    std::vector<std::string> ids_;
};

// Blocking one-shot helpers (new connection per call, 1 s connect and reply timeouts).
// They throw std::runtime_error naming the port and command on connection failure or timeout.
std::optional<std::string> redis_get(std::uint16_t port, std::string_view key);
void redis_set(std::uint16_t port, std::string_view key, std::string_view value,
               std::optional<long long> px_ms = {});
long long redis_pttl(std::uint16_t port, std::string_view key);
// Integers as digits, nil as "(nil)", errors as their text ("ERR ..."), arrays space-joined.
std::string redis_command(std::uint16_t port, std::vector<std::string> args);
// A hiredis reply in the words redis_command uses.
std::string render(const redisReply& r);

// Polls `done` until it is true or `limit` passes; false then. For what a server does after
// the client's operation completed: a release completes once a quorum of nodes confirmed it,
// and its deletes on the other nodes (already written to their sockets) follow.
bool eventually(const std::function<bool()>& done,
                std::chrono::milliseconds limit = std::chrono::seconds(5));

// Starts `args[0]` (a path) with `args` and `extra_env` ("NAME=value", before the inherited
// environment) as a child that dies with the calling thread (PR_SET_PDEATHSIG), reads
// /dev/null, writes stdout and stderr to `log` (appended) and inherits no other descriptor.
// Throws std::system_error when it cannot fork or open the log. Returns the child's pid.
pid_t spawn_child(std::vector<std::string> args, const std::vector<std::string>& extra_env,
                  const std::string& log);

// A port where nothing listens right now; another process may still take it later.
std::uint16_t unused_loopback_port();

}  // namespace redlock::test
