#pragma once

// The redis-server masters a benchmark run starts for itself: each on a free loopback port,
// in its own temporary directory, without persistence (--save '' --appendonly no). They are
// stopped and reaped (waitpid) when the object goes away, and also when the program is
// interrupted (SIGINT, SIGTERM, SIGHUP), fails with an uncaught exception, or dies without
// a chance to clean up (PR_SET_PDEATHSIG).

#include <sys/types.h>

#include <cstdint>
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
    std::vector<std::string> urls() const;
    std::vector<pid_t> pids() const;
    /// Stops every server (SIGTERM with a SIGCONT, in case a scenario left it stopped, then
    /// SIGKILL after 2 s), reaps it, removes its directory. Idempotent.
    void stop();

  private:
    struct server
    {
        pid_t pid = -1;
        std::uint16_t port = 0;
        std::string dir;
        std::string log;
        int slot = -1;  // in the signal-safe registry
    };
    void start_one(server& s);
    static void stop_one(server& s);

    std::vector<server> servers_;
};

/// Installs the handlers that stop this program's servers on SIGINT, SIGTERM and SIGHUP and
/// on std::terminate. Call once, before starting servers.
void install_cleanup_handlers();

}  // namespace bench
