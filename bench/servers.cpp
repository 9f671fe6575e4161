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
// no locks. An entry's pid is set once the server answers and cleared (to -1) before the
// harness stops it. The files are those the server's directory may hold (no persistence):
// its log, and for a cluster node nodes.conf and the harness's cluster-create.log.
constexpr int max_registered = 64;
constexpr int files_per_server = 3;
struct registered
{
    std::atomic<pid_t> pid{-1};
    char files[files_per_server][512] = {};
    char dir[512] = {};
};
registered registry[max_registered];
std::atomic<int> registry_used{0};

// Async-signal-safe: kill(2), waitpid(2), unlink(2) and rmdir(2) only.
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
        for (const char* file : registry[i].files) {
            if (file[0] != '\0') {
                ::unlink(file);
            }
        }
        ::rmdir(registry[i].dir);
    }
    errno = saved_errno;
}

// Puts `server` in the registry; returns its entry.
int register_server(const redlock::test::redis_server& server)
{
    const std::string dir = server.dir();
    const std::string files[files_per_server] = {dir + "/redis.log", dir + "/nodes.conf",
                                                 dir + "/cluster-create.log"};
    const int entry = registry_used.fetch_add(1);
    if (entry >= max_registered || dir.size() >= sizeof registry[0].dir) {
        throw std::runtime_error("too many servers, or a temporary path too long");
    }
    for (int f = 0; f < files_per_server; ++f) {
        if (files[f].size() >= sizeof registry[0].files[f]) {
            throw std::runtime_error("a temporary path too long");
        }
        std::strcpy(registry[entry].files[f], files[f].c_str());
    }
    std::strcpy(registry[entry].dir, dir.c_str());
    registry[entry].pid.store(server.pid());
    return entry;
}

// Takes servers out of the registry: the signal handler then leaves them to the harness.
void unregister(const std::vector<int>& entries)
{
    for (int entry : entries) {
        registry[entry].pid.store(-1);
    }
}

// Registers every server of `group` (a redis_cluster or a cluster_deployment); on failure
// unregisters those already registered.
template <class Group>
std::vector<int> register_all(const Group& group)
{
    std::vector<int> entries;
    try {
        for (std::size_t i = 0; i < group.size(); ++i) {
            entries.push_back(register_server(group[i]));
        }
    } catch (...) {
        unregister(entries);
        throw;
    }
    return entries;
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

local_servers::local_servers(int n)
    : cluster_(static_cast<std::size_t>(n), server_args), entries_(register_all(cluster_))
{
}

local_servers::~local_servers()
{
    unregister(entries_);
}

std::vector<pid_t> local_servers::pids() const
{
    std::vector<pid_t> out;
    for (std::size_t i = 0; i < cluster_.size(); ++i) {
        out.push_back(cluster_[i].pid());
    }
    return out;
}

local_cluster::local_cluster(int masters)
    : cluster_(static_cast<std::size_t>(masters), 0, server_args), entries_(register_all(cluster_))
{
}

local_cluster::~local_cluster()
{
    unregister(entries_);
}

std::vector<std::string> local_cluster::master_urls() const
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i < cluster_.size(); ++i) {
        out.push_back(cluster_[i].url());
    }
    return out;
}

std::vector<pid_t> local_cluster::pids() const
{
    std::vector<pid_t> out;
    for (std::size_t i = 0; i < cluster_.size(); ++i) {
        out.push_back(cluster_[i].pid());
    }
    return out;
}

std::vector<std::string> local_cluster::keys_owned_by(std::size_t m, std::size_t count,
                                                      const std::string& prefix)
{
    std::vector<std::string> keys;
    for (std::size_t n = 0; keys.size() < count; ++n) {
        if (n >= 1000 * count + 1000) {
            throw std::runtime_error("no keys found on cluster master " + std::to_string(m));
        }
        std::string key = prefix + std::to_string(n);
        const auto slot = redlock::test::cluster_deployment::slot_of(key);
        auto known = owner_.find(slot);
        if (known == owner_.end()) {
            const auto owner = cluster_.owner_of_slot(slot);
            if (!owner) {
                throw std::runtime_error("cluster: no master owns slot " + std::to_string(slot));
            }
            known = owner_.emplace(slot, *owner).first;
        }
        if (known->second == m) {
            keys.push_back(std::move(key));
        }
    }
    return keys;
}

}  // namespace bench
