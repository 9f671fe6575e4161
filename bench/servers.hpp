// SPDX-License-Identifier: BSL-1.0
#pragma once

// The redis-server masters a benchmark run starts for itself, by the test harness
// (tests/common/redis_server.hpp): each on a free loopback port, in its own temporary
// directory, without persistence. They go (killed, reaped, directory removed) when the object
// goes away, and also when the program is interrupted (SIGINT, SIGTERM, SIGHUP) or fails with
// an uncaught exception; they die with the program in any case (PR_SET_PDEATHSIG).

#include "common/redis_server.hpp"

#include <sys/types.h>

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
    void register_all();

    redlock::test::redis_cluster cluster_;
    std::vector<int> slots_;  // in the signal-safe registry
};

/// Installs the handlers that stop this program's servers on SIGINT, SIGTERM and SIGHUP and
/// on std::terminate. Call once, before starting servers.
void install_cleanup_handlers();

}  // namespace bench
