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

namespace redlock::test {

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
    ~redis_server();
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    std::uint16_t port() const { return port_; }
    std::string url() const;
    pid_t pid() const { return pid_; }
    const std::string& dir() const { return dir_; }  // holds redis.log

    void pause();    // SIGSTOP; returns once the process is stopped. No-op if paused or dead.
    void resume();   // SIGCONT. No-op if dead.
    void kill();     // SIGKILL + waitpid. Idempotent.
    void restart();  // kill, then start again on the same port and dir.
    bool running() const;
    bool paused() const { return paused_ && running(); }

  private:
    struct sentinel_config
    {
        std::string text;
    };
    explicit redis_server(sentinel_config config);
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

// Blocking one-shot helpers (new connection per call, 1 s connect and reply timeouts).
// They throw std::runtime_error naming the port and command on connection failure or timeout.
std::optional<std::string> redis_get(std::uint16_t port, std::string_view key);
void redis_set(std::uint16_t port, std::string_view key, std::string_view value,
               std::optional<long long> px_ms = {});
long long redis_pttl(std::uint16_t port, std::string_view key);
// Integers as digits, nil as "(nil)", errors as their text ("ERR ..."), arrays space-joined.
std::string redis_command(std::uint16_t port, std::vector<std::string> args);

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
