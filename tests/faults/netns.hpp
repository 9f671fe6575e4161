// SPDX-License-Identifier: BSL-1.0
#pragma once

// Network namespaces for the partition scenarios (partition_scenarios.cpp): a private network
// of namespaces that the suite creates, faults with nftables, and removes again.
//
// A `lab` is one hub namespace holding a Linux bridge, and one namespace per host (a
// redis-server or a worker process), each joined to the bridge by a veth pair. Addresses come
// from 10.213.0.0/24 and exist only inside these namespaces: no interface, address or route is
// added to the namespace the suite runs in, so two runs (each with its own bridge) never see
// each other, and nothing the hosts send can leave the lab. The driver itself reaches the
// hosts from the hub (10.213.0.1), whose traffic is never dropped, by creating its sockets
// there (setns on the calling thread for the connect only).
//
// Every name carries a per-run prefix ("rlpart<pid>x<n>") so that concurrent runs do not
// collide; the lab removes everything it made in its destructor (also when its constructor
// fails half-way), and remove_stale() removes what runs that died (SIGKILL) left behind.
//
// A partition is a set of drops, applied with nftables on the bridge in the hub namespace
// (family bridge, hook forward), which every packet between two hosts crosses: one nft
// transaction changes every link at the same instant. A drop is one direction, from one
// address to another: dropping a server's packets to a process loses its replies (and the TCP
// acknowledgements of the requests, which the process then retransmits, though they arrived).
// Dropping is silent: the sender sees no error, only missing replies. ARP still passes.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace redlock::faults::netns {

// Runs `args` (args[0] a program name, looked up on PATH) to its end, bounded by `limit`;
// returns its output (stdout and stderr). Throws std::runtime_error with the output when it
// exits other than with status 0 or does not end in time.
std::string run_program(const std::vector<std::string>& args,
                        std::chrono::milliseconds limit = std::chrono::seconds(10));

// Why the partition scenarios cannot run here (not root, or a namespace cannot be created),
// or nullopt when they can. Checked once per process; creates and removes a probe namespace.
std::optional<std::string> unavailable();

// Removes the namespaces of earlier runs (by the prefix) whose process is gone; returns their
// names. Namespaces of runs still alive are left alone.
std::vector<std::string> remove_stale();

// A host of the lab: its namespace and its address on the bridge.
struct host
{
    std::string ns;
    std::string address;
};

// Packets from the first address to the second are dropped.
using drops = std::set<std::pair<std::string, std::string>>;

class lab
{
  public:
    // The hub and its bridge. Throws std::runtime_error when a command fails (after removing
    // what it made).
    lab();
    ~lab();
    lab(const lab&) = delete;
    lab& operator=(const lab&) = delete;

    // A new namespace joined to the bridge, with address 10.213.0.<octet>.
    host add_host(const std::string& name, int octet);

    // `args` run inside `h`'s namespace (`ip netns exec NS args...`, which execs the program
    // in place: the pid spawned is the program's).
    static std::vector<std::string> exec_in(const host& h, std::vector<std::string> args);

    // Replaces what the bridge drops, atomically (one nft transaction); empty heals all.
    void set_drops(const drops& d);

    // A Redis command to `address`:`port` over a fresh connection made from the hub (bounded
    // by `limit` for the connect and for the reply). Integers as digits, nil as "(nil)",
    // arrays space-joined, errors as their text. Throws std::runtime_error when no reply comes.
    std::string redis(const std::string& address, std::uint16_t port,
                      const std::vector<std::string>& args,
                      std::chrono::milliseconds limit = std::chrono::seconds(1)) const;

    const std::string& prefix() const { return prefix_; }

  private:
    void remove_all() noexcept;
    // `ip -n NS -batch`: several commands in one process.
    void run_batch(const std::string& ns, const std::string& commands);

    std::string prefix_;
    std::string hub_;
    std::string dir_;                      // nft rule files
    std::vector<std::string> namespaces_;  // in creation order; the hub first
    int bridge_ports_ = 0;
};

// A child process that is killed (SIGKILL) and reaped when destroyed, unless it exited.
class child
{
  public:
    // Like redlock::test::spawn_child: stdout and stderr to `log`.
    child(std::vector<std::string> args, const std::string& log);
    ~child() { kill(); }
    child(const child&) = delete;
    child& operator=(const child&) = delete;

    pid_t pid() const { return pid_; }
    void signal(int sig);
    // True once it has exited (reaped); false at the deadline.
    bool wait_exit(std::chrono::steady_clock::time_point deadline);
    void kill();
    bool exited_ok() const;
    std::string describe_status() const;

  private:
    pid_t pid_ = -1;
    bool exited_ = false;
    int status_ = 0;
};

// A redis-server in a namespace of a lab, on port 6379 of its host's address, without
// persistence. The constructor returns once it answers PING from the hub (bounded, 5 s).
class server
{
  public:
    static constexpr std::uint16_t port = 6379;
    server(const lab& l, host h, const std::string& dir);
    ~server() = default;

    const host& where() const { return host_; }
    std::string url() const { return "redis://" + host_.address + ":" + std::to_string(port); }
    std::string command(const std::vector<std::string>& args) const
    {
        return lab_.redis(host_.address, port, args);
    }

  private:
    const lab& lab_;
    host host_;
    std::string log_;
    child process_;
};

}  // namespace redlock::faults::netns
