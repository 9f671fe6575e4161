// SPDX-License-Identifier: BSL-1.0
#pragma once

// The redis-server masters a benchmark run starts for itself, by the test harness
// (tests/common/redis_server.hpp): each on a free loopback port, in its own temporary
// directory, without persistence. They go (killed, reaped, directory removed) when the object
// goes away, and also when the program is interrupted (SIGINT, SIGTERM, SIGHUP) or fails with
// an uncaught exception; they die with the program in any case (PR_SET_PDEATHSIG). Either
// independent servers (local_servers) or one Redis Cluster (local_cluster).

#include "common/redis_server.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bench {

class local_servers
{
  public:
    /// Starts `n` servers; throws std::runtime_error (with the log's tail) when one does
    /// not answer PING within 5 s. Servers already started are stopped again.
    explicit local_servers(int n);
    ~local_servers();
    local_servers(const local_servers&) = delete;
    local_servers& operator=(const local_servers&) = delete;

    /// "redis://127.0.0.1:PORT", one per server.
    std::vector<std::string> urls() const { return cluster_.urls(); }
    std::vector<pid_t> pids() const;

  private:
    redlock::test::redis_cluster cluster_;
    std::vector<int> entries_;  // in the signal-safe registry
};

/// A Redis Cluster of `masters` masters without replicas, the slots shared evenly among them.
class local_cluster
{
  public:
    /// Starts and joins the servers; throws std::runtime_error when the cluster does not
    /// come up (with the harness's details).
    explicit local_cluster(int masters);
    ~local_cluster();
    local_cluster(const local_cluster&) = delete;
    local_cluster& operator=(const local_cluster&) = delete;

    std::size_t masters() const { return cluster_.size(); }
    /// "redis-cluster://127.0.0.1:P1,127.0.0.1:P2,...": the whole cluster as one node.
    std::string url() const { return cluster_.url(); }
    /// "redis://127.0.0.1:PORT" of each master, to reach it directly.
    std::vector<std::string> master_urls() const;
    std::vector<pid_t> pids() const;
    /// `count` distinct keys, each `prefix` followed by a number, whose slots master `m`
    /// owns (by CLUSTER SLOTS).
    std::vector<std::string> keys_owned_by(std::size_t m, std::size_t count,
                                           const std::string& prefix);

  private:
    redlock::test::cluster_deployment cluster_;
    std::map<std::uint16_t, std::size_t> owner_;  // slots asked about so far
    std::vector<int> entries_;                    // in the signal-safe registry
};

/// Installs the handlers that stop this program's servers on SIGINT, SIGTERM and SIGHUP and
/// on std::terminate. Call once, before starting servers.
void install_cleanup_handlers();

}  // namespace bench
