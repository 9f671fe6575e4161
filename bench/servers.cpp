// SPDX-License-Identifier: BSL-1.0
#include "servers.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace bench {
namespace {

// The harness runs its servers at --hz 100 (finer expiry for tests); a benchmark measures
// them as they are deployed, at the server's default.
const std::vector<std::string> server_args = {"--hz", "10"};

// What the signal handler needs to stop a server, in storage it may touch: no allocation,
// no locks. A slot's pid is set once the server answers and cleared (to -1) before the
// harness stops it.
constexpr int max_registered = 64;
struct registered
{
    std::atomic<pid_t> pid{-1};
    char log[512] = {};
    char dir[512] = {};
};
registered registry[max_registered];
std::atomic<int> registry_used{0};

// Async-signal-safe: kill(2), waitpid(2), unlink(2) and rmdir(2) only. The harness's
// server directory holds nothing but its log (no persistence).
void stop_registered() noexcept
{
    const int saved_errno = errno;
    const int n = std::min(registry_used.load(), max_registered);
    for (int i = 0; i < n; ++i) {
        const pid_t pid = registry[i].pid.exchange(-1);
        if (pid <= 0) {
            continue;
        }
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        ::unlink(registry[i].log);
        ::rmdir(registry[i].dir);
    }
    errno = saved_errno;
}

void on_fatal_signal(int sig)
{
    stop_registered();
    // Die of the same signal, so that the shell sees how we ended.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

std::terminate_handler previous_terminate = nullptr;

void on_terminate()
{
    stop_registered();
    if (previous_terminate) {
        previous_terminate();
    }
    std::abort();
}

}  // namespace

void install_cleanup_handlers()
{
    struct sigaction sa
    {
    };
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        ::sigaction(sig, &sa, nullptr);
    }
    ::signal(SIGPIPE, SIG_IGN);
    previous_terminate = std::set_terminate(on_terminate);
}

local_servers::local_servers(int n) : cluster_(static_cast<std::size_t>(n), server_args)
{
    try {
        register_all();
    } catch (...) {
        for (int slot : slots_) {
            registry[slot].pid.store(-1);
        }
        throw;
    }
}

void local_servers::register_all()
{
    for (std::size_t i = 0; i < cluster_.size(); ++i) {
        const std::string dir = cluster_[i].dir();
        const std::string log = dir + "/redis.log";
        const int slot = registry_used.fetch_add(1);
        if (slot >= max_registered || dir.size() >= sizeof registry[0].dir ||
            log.size() >= sizeof registry[0].log) {
            throw std::runtime_error("too many servers, or a temporary path too long");
        }
        std::strcpy(registry[slot].dir, dir.c_str());
        std::strcpy(registry[slot].log, log.c_str());
        registry[slot].pid.store(cluster_[i].pid());
        slots_.push_back(slot);
    }
}

local_servers::~local_servers()
{
    // Out of the registry first: the signal handler then leaves them to the harness.
    for (int slot : slots_) {
        registry[slot].pid.store(-1);
    }
}

std::vector<pid_t> local_servers::pids() const
{
    std::vector<pid_t> out;
    for (std::size_t i = 0; i < cluster_.size(); ++i) {
        out.push_back(cluster_[i].pid());
    }
    return out;
}

}  // namespace bench
