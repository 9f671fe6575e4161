// SPDX-License-Identifier: BSL-1.0
// The fault-injection suite. Each test case is one scenario: five fresh lock nodes (real
// redis-servers), one resource server that is never faulted, and four fault_worker processes
// that contend for two keys, each owner running a fenced and an unfenced read-modify-write on
// the resource (worker.cpp). Faults follow a schedule; afterwards the checker (checker.hpp)
// tallies the workers' logs and the resource's counters into one table row per scenario.
//
// Every scenario has an engineered part and, for most, a background part. The engineered part
// makes the outcome deterministic: worker 0 is told to stop itself inside a critical section
// (between its reads and its writes), the fault is applied (usually to the nodes that hold its
// key), and the driver waits for a rival's critical section on that key (an event in the logs,
// bounded by the holder's validity) before resuming it. In a safe scenario no rival may get in;
// in an unsafe one a rival must, and then the holder's or the rival's request must be refused
// by the fence. The background part repeats the fault at random while the workers contend, for
// the rest of the run.
//
//   scenario                  fault                                                   kind
//   baseline                  none (the holder is stopped 1.5 s within its validity)  safe
//   node-sigstop              SIGSTOP/SIGCONT of a minority of nodes                   safe
//   restart-aof-always        SIGKILL + restart of a majority, appendfsync always      safe
//   restart-delayed           SIGKILL of a majority, no persistence, restart after
//                             the longest TTL                                          safe
//   restart-at-once           the same, restarted at once                              unsafe
//   client-stop-past-ttl      the holder stopped past its TTL                          unsafe
//   client-pause-cmd          CLIENT PAUSE ms WRITE on up to a majority                safe
//   client-kill               CLIENT KILL TYPE normal on any nodes                     safe
//   fast-clock-1-of-5         node 0 on a x10 clock (libfaketime), holder outvotes it  safe
//   fast-clock-1-bare-quorum  the same, holder won with a bare quorum counting node 0  unsafe
//   fast-clock-3-of-5         nodes 0-2 on a x10 clock                                 unsafe
//   node-stopped-a-while      one node SIGSTOPped for the middle half of the run; the  safe
//                             rates before, during and after are printed, and
//                             acquisitions must go on while it is stopped
//
// Four more lock on ONE deployment as the only node (quorum 1), and end once their faults are
// done (their duration is a cap); each prints a line of figures under its row:
//
//   sentinel-failover-wait-0  a master, its replica and 3 Sentinels: engineered, the     unsafe
//                             replica cut off (SIGSTOP + CLIENT KILL TYPE replica)
//                             before worker 0 locks, the master killed, SENTINEL
//                             FAILOVER: a rival must get worker 0's lock; then 2
//                             forced failovers while worker 0 holds a lock
//   sentinel-failover-wait-1  the same with wait_for_replicas 1: worker 0 must get no    shown
//                             lock while the replica is cut off; second owners in the
//                             forced failovers are counted, not asserted
//   cluster-slot-migration    3 masters; locks on two keys of one slot, held 700 ms     safe
//                             with the watchdog, while the slot moves 6 times
//                             (SETSLOT, MIGRATE, SETSLOT NODE): no lock reported lost
//                             or found gone at release, locking goes on after each move
//   cluster-master-failover   3 masters with a replica each: engineered as for          unsafe
//                             Sentinel, then the master killed while worker 0 holds a
//                             lock; replica promoted (CLUSTER FAILOVER TAKEOVER)
//
// In the failover rows, locking must resume within 10 s of each failover, and the line under
// the row gives per failover the locks that got a second owner, the time until the new master
// was in charge and the time until locking resumed.
//
// Seven more scenarios start processes of their own instead (see their functions below):
// stalled-majority-failed-acquire (a failed acquire on three nodes, two of them stopped, must
// leave no key behind once they resume), processes-share-a-key (four processes with three
// waiters each on one key: no process keeps it longer than one expiry in a row, and each gets
// at least a quarter of the mean share) and semaphore-nodes-stopped (a semaphore of 2 permits
// on 5 nodes, one node after another stopped: never 3 holders within their validity, 2 at
// once at some point, every process served) and rw-nodes-stopped (a read-write lock read 70%
// of the time, the same faults: a writer never with anyone, readers together, every process
// served), fair-order (a fair mutex, four processes with three waiters each, every node up:
// no waiter overtaken by one that began to join after it had joined, no overlap, every
// process served) and fair-node-stopped (the same with one node after another stopped: no
// overtaking either, and the longest wait below a bound derived from the queue's timing), and
// election-leaders-killed-nodes-stopped (four candidates of an election on 5 nodes, each
// leading 2 s at a time, its current leader SIGKILLed three times and replaced by a fresh
// candidate while one node after another is stopped: never two leaders within their validity,
// terms that grow, a new leader within 1500 ms of each kill, and at the end every observer
// naming the current leader within one expiry of its grant).
//
// Safe: every critical section is alone (0 overlaps), and no fenced update is lost.
// Unsafe: at least one overlap, at least one request refused by the fence, no fenced update
// lost, and an update lost on the unfenced shadow counter (what fencing saved). Whether the
// overlap began within the earlier owner's validity tells a broken lock (restart-at-once, fast
// clocks) from a client that overran a lock that worked (client-stop-past-ttl); that is
// asserted too. Shown: overlaps depend on timing and are printed, not asserted either way; no
// fenced update may be lost.
//
// The network partitions (servers and workers in network namespaces, nftables drops) are the
// test suite `partitions`, in partition_scenarios.cpp; the scenarios here are the suite `faults`.
//
// `fault_tests -- --soak` (or REDLOCK_FAULTS_SOAK=1) runs each scenario ten times longer,
// repeating the engineered part every 10 s. REDLOCK_FAULTS_SEED fixes the random choices (not
// the timing). The workers' logs of a failed scenario are kept (the path is printed); set
// REDLOCK_FAULTS_KEEP_LOGS=1 to keep them all.

#define BOOST_TEST_MODULE redlock_faults
#include <boost/test/unit_test.hpp>

#include "checker.hpp"
#include "common/redis_server.hpp"
#include "process_io.hpp"
#include "run_profile.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
namespace rt = redlock::test;
namespace rf = redlock::faults;
using rf::log_dir;
using rf::soak_requested;

constexpr std::size_t node_count = 5;
constexpr std::size_t quorum = node_count / 2 + 1;
constexpr int worker_count = 4;
const std::vector<std::string> lock_keys = {"lock:a", "lock:b"};
constexpr ms work_time = 2ms;  // between a section's reads and writes
constexpr ms poll_interval = 2ms;
constexpr ms ready_timeout = 15s;
constexpr ms stop_timeout = 15s;    // for worker 0 to reach its next critical section
constexpr ms resume_timeout = 15s;  // for a resumed worker to finish its section
constexpr ms exit_grace = 30s;      // after the run, for workers to finish and exit
// How long a holder is kept stopped within its validity to show that nobody else gets in, and
// the margin kept before its validity ends.
constexpr ms safe_hold = 1500ms;
constexpr ms validity_margin = 300ms;
// A delayed restart waits the longest expiry in use plus this, for the nodes' clock drift.
constexpr ms restart_delay_margin = 200ms;
// The engineered part starts only while the workers have at least this long left to run.
constexpr ms engineered_lead = 5s;

// ---- the run profile ----

unsigned base_seed()
{
    static const unsigned seed = [] {
        if (const char* v = std::getenv("REDLOCK_FAULTS_SEED"); v && *v)
            return static_cast<unsigned>(std::strtoul(v, nullptr, 10));
        return std::random_device{}();
    }();
    return seed;
}

// ---- clocks ----

// CLOCK_MONOTONIC in nanoseconds: the scale of the workers' logs.
std::int64_t monotonic_ns()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

steady::time_point from_monotonic(std::int64_t ns)
{
    return steady::now() + std::chrono::nanoseconds(ns - monotonic_ns());
}

std::int64_t to_monotonic(steady::time_point t)
{
    return monotonic_ns() +
           std::chrono::duration_cast<std::chrono::nanoseconds>(t - steady::now()).count();
}

void sleep_until(steady::time_point t)
{
    std::this_thread::sleep_until(t);
}

// ---- libfaketime: a node whose clock runs ten times too fast ----

std::string existing(std::vector<std::string> candidates, std::string_view what)
{
    for (const auto& c : candidates)
        if (::access(c.c_str(), R_OK) == 0)
            return c;
    std::string list;
    for (const auto& c : candidates)
        list += "\n  " + c;
    throw std::runtime_error(std::string(what) + " not found; looked for:" + list +
                             "\n(install the Debian package faketime: scripts/setup.sh does)");
}

// The environment of a redis-server with a x10 clock. glibc's debug malloc is preloaded too:
// redis's jemalloc deadlocks under plain libfaketime (../shared/design/testing.md).
std::vector<std::string> fast_clock_env()
{
#if defined(__x86_64__)
    const std::string triplet = "x86_64-linux-gnu";
#elif defined(__aarch64__)
    const std::string triplet = "aarch64-linux-gnu";
#else
    const std::string triplet = "unknown";
#endif
    // REDLOCK_FAKETIME_LIB names the library where the Debian paths do not apply.
    const char* custom = std::getenv("REDLOCK_FAKETIME_LIB");
    const std::string faketime = existing(
        custom && *custom
            ? std::vector<std::string>{custom}
            : std::vector<std::string>{"/usr/lib/" + triplet + "/faketime/libfaketime.so.1",
                                       "/usr/lib/faketime/libfaketime.so.1"},
        "libfaketime");
    const std::string malloc_debug = existing({"/lib/" + triplet + "/libc_malloc_debug.so.0",
                                               "/usr/lib/" + triplet + "/libc_malloc_debug.so.0"},
                                              "glibc's libc_malloc_debug.so.0");
    return {"LD_PRELOAD=" + faketime + " " + malloc_debug, "FAKETIME=+0 x10"};
}

// A node's wall clock in microseconds, from TIME ("seconds microseconds").
long long node_time_us(std::uint16_t port)
{
    std::istringstream in(rt::redis_command(port, {"TIME"}));
    long long sec = 0, usec = 0;
    if (!(in >> sec >> usec))
        throw std::runtime_error("TIME on port " + std::to_string(port) + ": unexpected reply");
    return sec * 1'000'000 + usec;
}

// Makes sure the fault is really in effect: an unsafe scenario that fails for want of a fast
// clock should say so, not report a missing overlap.
void require_fast_clock(std::uint16_t port)
{
    const auto t0 = steady::now();
    const long long n0 = node_time_us(port);
    std::this_thread::sleep_for(100ms);  // a measurement interval, not a wait for an event
    const long long n1 = node_time_us(port);
    const double real_us = std::chrono::duration<double, std::micro>(steady::now() - t0).count();
    const double rate = static_cast<double>(n1 - n0) / real_us;
    if (rate < 5.0)
        throw std::runtime_error("node on port " + std::to_string(port) +
                                 " should run a x10 clock under libfaketime, but runs x" +
                                 std::to_string(rate));
}

// ---- worker processes ----

class worker_process
{
  public:
    // Like the servers: dies with the test, never holds its stdout (ctest would wait for it).
    worker_process(int id, std::vector<std::string> args, const std::string& log)
        : id_(id), pid_(redlock::test::spawn_child(std::move(args), {}, log))
    {
    }
    ~worker_process() { kill(); }
    worker_process(const worker_process&) = delete;
    worker_process& operator=(const worker_process&) = delete;

    int id() const { return id_; }
    bool running() const { return !exited_; }

    void signal(int sig)
    {
        if (!exited_)
            ::kill(pid_, sig);
    }

    // True once the worker has stopped itself (raise(SIGSTOP)); false if it exited instead or
    // the deadline passed.
    bool wait_stopped(steady::time_point deadline)
    {
        while (!exited_) {
            int st = 0;
            const pid_t r = ::waitpid(pid_, &st, WUNTRACED | WNOHANG);
            if (r == pid_ && WIFSTOPPED(st)) {
                stopped_ = true;
                return true;
            }
            if (r == pid_)
                reaped(st);
            else if (steady::now() >= deadline)
                return false;
            else
                std::this_thread::sleep_for(poll_interval);
        }
        return false;
    }

    // Continues a worker that stopped itself. Only then: a SIGCONT sent to a worker that is
    // exiting can reach it while LeakSanitizer has its threads stopped under ptrace (ASan
    // builds), and one such worker never finished exiting.
    void resume()
    {
        if (stopped_ && !exited_)
            ::kill(pid_, SIGCONT);
        stopped_ = false;
    }

    // True once the worker has exited (see status()); false at the deadline.
    bool wait_exit(steady::time_point deadline)
    {
        while (!exited_) {
            int st = 0;
            const pid_t r = ::waitpid(pid_, &st, WNOHANG);
            if (r == pid_)
                reaped(st);
            else if (steady::now() >= deadline)
                return false;
            else
                std::this_thread::sleep_for(poll_interval);
        }
        return true;
    }

    void kill()
    {
        if (exited_)
            return;
        ::kill(pid_, SIGKILL);
        ::kill(pid_, SIGCONT);
        int st = 0;
        while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
        reaped(st);
    }

    bool exited_ok() const { return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }

    std::string describe_status() const { return rf::describe_exit(exited_, status_); }

  private:
    void reaped(int st)
    {
        stopped_ = false;
        exited_ = true;
        status_ = st;
    }

    int id_;
    pid_t pid_ = -1;
    bool exited_ = false;
    bool stopped_ = false;  // stopped itself, seen by wait_stopped, not continued yet
    int status_ = 0;
};

// Worker 0 stopped inside a critical section: what it holds.
struct stop_event
{
    std::string key;
    std::uint64_t token = 0;
    std::string owner;
    std::int64_t start_ns = 0;
    std::int64_t until_ns = 0;
    steady::time_point until() const { return from_monotonic(until_ns); }
};

class run;

// What the workers lock on: five standalone servers (quorum 3), or one deployment that is the
// only node (quorum 1).
enum class lock_node {
    five_servers,
    sentinel,               // a master, its replica and three Sentinels (sentinel_setup)
    cluster,                // a Redis Cluster of three masters
    cluster_with_replicas,  // the same, each master with one replica
};

struct scenario
{
    std::string name;
    rf::expectation expect;
    ms expiry{2000};
    ms duration{8000};  // CI profile; the soak profile runs ten times longer
    std::vector<std::string> node_args{};
    std::size_t fast_clock_nodes = 0;  // nodes 0..n-1 run a x10 clock
    std::function<void(run&)> engineered{};
    std::function<void(run&, steady::time_point)> background{};  // runs until the time given
    // Checks of its own after the run (besides the checker's); returns what failed.
    std::function<std::vector<std::string>(run&)> verify{};
    lock_node node = lock_node::five_servers;
    std::vector<std::string> keys = lock_keys;
    int wait_for_replicas = 0;  // the workers' options::wait_for_replicas
    bool auto_extend = false;   // the workers' watchdog
    ms work = work_time;        // between a section's reads and its writes
};

// ---- a Sentinel deployment as the lock node ----
//
// Two data servers, a master and its replica, whose roles swap on every failover, and three
// Sentinels that monitor them as "locks" (as in tests/integration/test_sentinel.cpp). Sentinels
// declare a master down only after 30 s: the failovers here are forced ones.

const std::string sentinel_master_name = "locks";
constexpr ms deployment_poll = 10ms;  // Sentinel and cluster checks open connections: not 2 ms
constexpr ms deployment_timeout = 15s;

// Polls `done` (whose exceptions count as "not yet": a server coming up, a Sentinel not yet
// told) until it holds; throws naming `what` and the last exception after `limit`.
void poll_until(const std::function<bool()>& done, ms limit, const std::string& what)
{
    const auto deadline = steady::now() + limit;
    std::string last;
    for (;;) {
        try {
            if (done())
                return;
        } catch (const std::exception& e) {
            last = e.what();
        }
        if (steady::now() >= deadline)
            throw std::runtime_error("timed out after " + std::to_string(limit.count()) +
                                     " ms waiting for " + what +
                                     (last.empty() ? "" : " (last error: " + last + ")"));
        std::this_thread::sleep_for(deployment_poll);
    }
}

// Whether the master on `master_port` streams its writes to a replica: the replica is online
// and has acknowledged a write (a master streams to a freshly synchronised replica only after
// its first acknowledgement, about a second after the sync; tests/integration/fixture.hpp).
// `key` is written to move the offset on; in a cluster it must be in a slot of this master.
bool replica_streams(std::uint16_t master_port, const std::string& key = "replica-streams")
{
    rt::redis_set(master_port, key, "1");
    const std::string info = rt::redis_command(master_port, {"INFO", "replication"});
    const auto at = info.find("state=online,offset=");
    return at != std::string::npos && info.compare(at + 20, 2, "0,") != 0;  // not offset 0
}

class sentinel_setup
{
  public:
    sentinel_setup()
    {
        const std::vector<std::string> common = {"--repl-diskless-sync-delay", "0"};
        servers_[0] = std::make_unique<rt::redis_server>(common);
        auto replica_args = common;
        replica_args.insert(replica_args.end(),
                            {"--replicaof", "127.0.0.1", std::to_string(servers_[0]->port())});
        servers_[1] = std::make_unique<rt::redis_server>(replica_args);
        wait_streaming();
        // Started once the replica is in sync: a Sentinel learns of replicas from the
        // master's INFO, which it reads at once and then every 10 s.
        for (int i = 0; i < 3; ++i)
            sentinels_.push_back(
                rt::redis_server::sentinel(sentinel_master_name, master().port(), 2, 30s));
        for (const auto& s : sentinels_)
            poll_until(
                [&] {
                    const std::string replicas = rt::redis_command(
                        s->port(), {"SENTINEL", "replicas", sentinel_master_name});
                    return replicas.find(std::to_string(replica().port())) != std::string::npos &&
                           replicas.find("flags slave ") != std::string::npos &&
                           replicas.find("master-link-status ok") != std::string::npos;
                },
                deployment_timeout,
                "Sentinel " + std::to_string(s->port()) + " to see the replica");
    }

    std::string url() const
    {
        std::string u = "redis-sentinel://";
        for (std::size_t i = 0; i < sentinels_.size(); ++i)
            u += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(sentinels_[i]->port());
        return u + "/" + sentinel_master_name;
    }

    rt::redis_server& master() { return *servers_[master_]; }
    rt::redis_server& replica() { return *servers_[1 - master_]; }

    // Until the master streams to the replica (bounded).
    void wait_streaming()
    {
        poll_until(
            [&] { return replica_streams(master().port()); }, deployment_timeout,
            "the master on port " + std::to_string(master().port()) + " to stream to its replica");
    }

    // Forces a failover from the current master to the replica (SENTINEL FAILOVER, repeated
    // while the Sentinel finds no replica to promote yet, e.g. one it has not heard from since
    // it resumed) and waits until every Sentinel names the replica as the master. Returns the
    // monotonic times the failover was forced and the switch was complete; afterwards the
    // roles are swapped here (master() is the promoted server).
    std::pair<std::int64_t, std::int64_t> fail_over()
    {
        const std::uint16_t promoted = replica().port();
        poll_until(
            [&] {
                const std::string reply = rt::redis_command(
                    sentinels_[0]->port(), {"SENTINEL", "FAILOVER", sentinel_master_name});
                if (reply != "OK")  // kept as the last error for the timeout's message
                    throw std::runtime_error("SENTINEL FAILOVER: " + reply);
                return true;
            },
            deployment_timeout, "SENTINEL FAILOVER to be accepted");
        const std::int64_t forced = monotonic_ns();
        for (const auto& s : sentinels_)
            poll_until([&] { return named_master(*s) == promoted; }, deployment_timeout,
                       "Sentinel " + std::to_string(s->port()) + " to name port " +
                           std::to_string(promoted) + " as the master");
        master_ = 1 - master_;
        return {forced, monotonic_ns()};
    }

    // Makes the former master (running, or restarted empty if it was killed) a replica of the
    // current one, as the Sentinels would themselves some 10 s after the switch.
    void demote_former_master()
    {
        rt::redis_server& former = replica();
        if (!former.running())
            former.restart();
        const std::string reply = rt::redis_command(
            former.port(), {"REPLICAOF", "127.0.0.1", std::to_string(master().port())});
        if (reply != "OK")
            throw std::runtime_error("REPLICAOF on port " + std::to_string(former.port()) + ": " +
                                     reply);
    }

  private:
    static std::uint16_t named_master(rt::redis_server& sentinel)
    {
        // "127.0.0.1 PORT"
        const std::string reply = rt::redis_command(
            sentinel.port(), {"SENTINEL", "get-master-addr-by-name", sentinel_master_name});
        const auto space = reply.rfind(' ');
        return space == std::string::npos
                   ? 0
                   : static_cast<std::uint16_t>(std::stoul(reply.substr(space + 1)));
    }

    std::unique_ptr<rt::redis_server> servers_[2];
    std::size_t master_ = 0;
    std::vector<std::unique_ptr<rt::redis_server>> sentinels_;
};

// A failover the scenario made, for its summary.
struct failover_record
{
    bool engineered = false;
    std::int64_t forced_ns = 0;    // the failover began (forced, or the master killed)
    std::int64_t switched_ns = 0;  // the new master was in charge
    std::int64_t ready_ns = 0;     // the former master gone or demoted: no more locks there
    std::int64_t resumed_ns = 0;   // the first critical section that began after ready_ns
};

// One scenario's servers, workers and logs.
class run
{
  public:
    run(const scenario& s, bool soak, unsigned seed) : s_(s), rng_(seed), soak_(soak)
    {
        resource_ = std::make_unique<rt::redis_server>();
        std::string urls;
        switch (s.node) {
            case lock_node::five_servers: {
                const auto fast_env =
                    s.fast_clock_nodes ? fast_clock_env() : std::vector<std::string>{};
                for (std::size_t i = 0; i < node_count; ++i) {
                    nodes_.push_back(std::make_unique<rt::redis_server>(
                        s.node_args,
                        i < s.fast_clock_nodes ? fast_env : std::vector<std::string>{}));
                    if (i < s.fast_clock_nodes)
                        require_fast_clock(nodes_.back()->port());
                }
                for (auto& n : nodes_)
                    urls += (urls.empty() ? "" : ",") + n->url();
                break;
            }
            case lock_node::sentinel:
                sentinel_ = std::make_unique<sentinel_setup>();
                urls = sentinel_->url();
                break;
            case lock_node::cluster:
            case lock_node::cluster_with_replicas:
                cluster_ = std::make_unique<rt::cluster_deployment>(
                    3, s.node == lock_node::cluster_with_replicas ? 1 : 0, s.node_args);
                urls = cluster_->url();
                break;
        }
        std::string keys;
        for (auto& k : s.keys)
            keys += (keys.empty() ? "" : ",") + k;
        duration_ = soak ? s.duration * 10 : s.duration;
        ready_.assign(worker_count, false);
        for (int i = 0; i < worker_count; ++i) {
            const std::string log = dir_.path + "/worker-" + std::to_string(i) + ".log";
            readers_.emplace_back(log);
            std::vector<std::string> args = {REDLOCK_FAULT_WORKER,
                                             "--id",
                                             std::to_string(i),
                                             "--nodes",
                                             urls,
                                             "--resource-port",
                                             std::to_string(resource_->port()),
                                             "--keys",
                                             keys,
                                             "--expiry-ms",
                                             std::to_string(s.expiry.count()),
                                             "--work-ms",
                                             std::to_string(s.work.count()),
                                             "--duration-ms",
                                             std::to_string(duration_.count()),
                                             "--seed",
                                             std::to_string(seed + 1 + i)};
            if (s.wait_for_replicas)
                args.insert(args.end(),
                            {"--wait-for-replicas", std::to_string(s.wait_for_replicas)});
            if (s.auto_extend)
                args.insert(args.end(), {"--auto-extend", "1"});
            workers_.push_back(std::make_unique<worker_process>(i, std::move(args), log));
        }
        wait_for([&] { return std::count(ready_.begin(), ready_.end(), true) == worker_count; },
                 ready_timeout, "all workers to start");
        end_ = steady::now() + duration_;
    }

    run(const run&) = delete;
    run& operator=(const run&) = delete;

    const scenario& spec() const { return s_; }
    bool soak() const { return soak_; }
    steady::time_point end() const { return end_; }
    steady::time_point start() const { return end_ - duration_; }
    // The stretches of CLOCK_MONOTONIC during which a background fault was in effect.
    std::vector<std::pair<std::int64_t, std::int64_t>>& fault_windows() { return windows_; }
    rt::redis_server& node(std::size_t i) { return *nodes_.at(i); }
    sentinel_setup& sentinel() { return *sentinel_; }
    rt::cluster_deployment& cluster() { return *cluster_; }
    std::vector<failover_record>& failovers() { return failovers_; }
    std::mt19937& rng() { return rng_; }
    const std::string& dir() const { return dir_.path; }
    void keep_logs() { dir_.keep = true; }
    void note(std::string text) { notes_.push_back(std::move(text)); }
    // A problem found by the schedule that should not end it.
    void fail(std::string text) { problems_.push_back(std::move(text)); }
    const std::vector<std::string>& notes() const { return notes_; }

    // Reads what the workers logged since the last call.
    void poll()
    {
        for (std::size_t i = 0; i < readers_.size(); ++i) {
            for (auto& text : readers_[i].new_lines()) {
                auto line = rf::parse_line(text);
                if (!line) {
                    stray_.push_back("worker " + std::to_string(i) + ": " + text);
                    continue;
                }
                if (line->kind == "section") {
                    auto s = rf::parse_section(*line, static_cast<int>(i));
                    if (s)
                        sections_.push_back(std::move(*s));
                    else
                        stray_.push_back("worker " + std::to_string(i) + " (bad): " + text);
                } else if (line->kind == "ready") {
                    ready_.at(i) = true;
                } else if (line->kind == "acquire_failed") {
                    ++acquire_failures_;
                    ++failure_reasons_[std::string(line->get("why").value_or("?"))];
                } else if (line->kind == "stop") {
                    stops_.push_back(*line);
                } else if (line->kind == "fatal" || line->kind == "fence_error") {
                    problems_.push_back("worker " + std::to_string(i) + ": " + text);
                } else if (line->kind == "lost" || line->kind == "release_failed") {
                    // Expected where a fault took the lock away; scenarios where nothing
                    // did check these (see no_lock_lost).
                    (line->kind == "lost" ? lost_ : release_failed_)
                        .push_back("worker " + std::to_string(i) + ": " + text);
                }
            }
        }
    }

    // Polls the logs until `pred` holds; throws naming `what` after `limit`.
    template <class Pred>
    void wait_for(Pred pred, ms limit, const std::string& what)
    {
        const auto deadline = steady::now() + limit;
        for (;;) {
            poll();
            if (pred())
                return;
            for (auto& w : workers_)
                if (w->wait_exit(steady::now()) && !w->exited_ok())  // reaps, never blocks
                    throw std::runtime_error("worker " + std::to_string(w->id()) + " ended (" +
                                             w->describe_status() + ") while waiting for " + what +
                                             recent_output());
            if (steady::now() >= deadline)
                throw std::runtime_error("timed out after " + std::to_string(limit.count()) +
                                         " ms waiting for " + what + recent_output());
            std::this_thread::sleep_for(poll_interval);
        }
    }

    // Arms worker 0 and waits until it has stopped itself inside a critical section.
    stop_event stop_holder()
    {
        arm_holder();
        auto e = await_holder(steady::now() + stop_timeout);
        if (!e)
            throw std::runtime_error("worker 0 did not stop inside a critical section within " +
                                     std::to_string(stop_timeout.count()) + " ms (" +
                                     workers_.at(0)->describe_status() + ")");
        return *e;
    }

    // Arms worker 0: it stops itself in the first critical section whose lock it requests
    // from now on.
    void arm_holder()
    {
        stops_before_arm_ = stops_.size();
        workers_.at(0)->signal(SIGUSR1);
    }

    // After arm_holder(): what worker 0 holds once it has stopped, or nullopt if it has not
    // stopped by `deadline` (it stays armed then).
    std::optional<stop_event> await_holder(steady::time_point deadline)
    {
        worker_process& w = *workers_.at(0);
        if (!w.wait_stopped(deadline))
            return std::nullopt;
        // The stop line was written before the stop: it is in the log now.
        wait_for([&] { return stops_.size() > stops_before_arm_; }, 1s, "worker 0's stop line");
        const rf::log_line& l = stops_.back();
        stop_event e;
        e.key = std::string(l.get("key").value_or(""));
        e.owner = std::string(l.get("owner").value_or(""));
        e.token = std::stoull(std::string(l.get("token").value_or("0")));
        e.start_ns = std::stoll(std::string(l.get("start").value_or("0")));
        e.until_ns = std::stoll(std::string(l.get("until").value_or("0")));
        return e;
    }

    // Waits until a critical section that began after `after_ns` is logged; returns its start.
    // Throws after `limit`.
    std::int64_t wait_section_after(std::int64_t after_ns, ms limit, const std::string& what)
    {
        std::int64_t first = 0;
        wait_for(
            [&] {
                for (const auto& s : sections_)
                    if (s.start_ns > after_ns && (first == 0 || s.start_ns < first))
                        first = s.start_ns;
                return first != 0;
            },
            limit, what);
        return first;
    }

    // Ends the run now: every worker finishes its current section and exits (SIGTERM).
    void end_now()
    {
        for (auto& w : workers_) {
            w->wait_stopped(steady::now());  // notices a worker 0 that stopped itself unawaited
            w->resume();
            w->signal(SIGTERM);
        }
        end_ = std::min(end_, steady::now());
    }

    // Waits until another owner's critical section on the stopped holder's key is logged (it
    // overlaps the holder's, which is still open), or until `limit`. True if one was.
    bool wait_rival(const stop_event& e, steady::time_point limit)
    {
        for (;;) {
            poll();
            for (const auto& s : sections_)
                if (s.key == e.key && s.owner != e.owner && s.end_ns > e.start_ns)
                    return true;
            if (steady::now() >= limit)
                return false;
            std::this_thread::sleep_for(poll_interval);
        }
    }

    // Resumes worker 0 and waits for the section it was stopped in to be logged.
    void resume_holder(const stop_event& e)
    {
        workers_.at(0)->resume();
        wait_for(
            [&] {
                return std::any_of(sections_.begin(), sections_.end(), [&](const rf::section& s) {
                    return s.owner == e.owner && s.token == e.token;
                });
            },
            resume_timeout, "worker 0 to finish its critical section after SIGCONT");
    }

    // The nodes (running and answering) whose copy of `e.key` holds the stopped owner's value,
    // then the others, so that the first `quorum` of them are the ones to fault.
    std::vector<std::size_t> holders_first(const stop_event& e)
    {
        std::vector<std::size_t> holding, others;
        for (std::size_t i = 0; i < node_count; ++i) {
            const bool holds = nodes_[i]->running() && !nodes_[i]->paused() &&
                               rt::redis_get(nodes_[i]->port(), e.key) == e.owner;
            (holds ? holding : others).push_back(i);
        }
        note(std::to_string(holding.size()) + " node(s) held " + e.key + " for worker 0");
        holding.insert(holding.end(), others.begin(), others.end());
        return holding;
    }

    // Whether node i's copy of the stopped holder's key still has its value.
    bool holds(std::size_t i, const stop_event& e)
    {
        return rt::redis_get(nodes_.at(i)->port(), e.key) == e.owner;
    }

    // `n` distinct random node indexes.
    std::vector<std::size_t> random_nodes(std::size_t n)
    {
        std::vector<std::size_t> all(node_count);
        std::iota(all.begin(), all.end(), std::size_t{0});
        std::shuffle(all.begin(), all.end(), rng_);
        all.resize(n);
        return all;
    }

    // After the schedule: every node back up, then wait for the workers to end their runs.
    void finish()
    {
        for (auto& n : nodes_) {
            n->resume();
            if (!n->running())
                n->restart();
        }
        const auto deadline = std::max(end_, steady::now()) + exit_grace;
        for (auto& w : workers_) {
            w->resume();  // in case the schedule failed while worker 0 was stopped
            if (!w->wait_exit(deadline))
                problems_.push_back("worker " + std::to_string(w->id()) + " did not exit within " +
                                    std::to_string(exit_grace.count()) + " ms after its run");
        }
        for (auto& w : workers_)
            w->kill();
        poll();
        for (auto& w : workers_)
            if (!w->exited_ok())
                problems_.push_back("worker " + std::to_string(w->id()) + ": " +
                                    w->describe_status());
    }

    rf::final_counters finals()
    {
        rf::final_counters f;
        for (const auto& k : s_.keys) {
            f.fenced[k] =
                counter(rt::redis_command(resource_->port(), {"HGET", "fenced:" + k, "value"}));
            f.shadow[k] = counter(rt::redis_command(resource_->port(), {"GET", "shadow:" + k}));
        }
        return f;
    }

    const std::vector<rf::section>& sections() const { return sections_; }
    std::size_t acquire_failures() const { return acquire_failures_; }
    const std::vector<std::string>& problems() const { return problems_; }
    const std::vector<std::string>& stray() const { return stray_; }
    const std::map<std::string, std::size_t>& failure_reasons() const { return failure_reasons_; }
    const std::vector<std::string>& lost() const { return lost_; }
    const std::vector<std::string>& release_failed() const { return release_failed_; }

  private:
    // The workers' complaints so far, for an error message.
    std::string recent_output() const
    {
        std::string out;
        for (const auto* list : {&problems_, &stray_})
            for (std::size_t i = list->size() > 5 ? list->size() - 5 : 0; i < list->size(); ++i)
                out += "\n  " + (*list)[i];
        return out;
    }

    static long long counter(const std::string& reply)
    {
        if (reply == "(nil)")
            return 0;
        return std::stoll(reply);
    }

    // Declared first, so that the processes writing there are gone before it is.
    log_dir dir_;
    const scenario& s_;
    std::mt19937 rng_;
    bool soak_;
    ms duration_{};
    steady::time_point end_{};
    // Declared before the workers, so destroyed after them: clients go first.
    std::unique_ptr<rt::redis_server> resource_;
    std::vector<std::unique_ptr<rt::redis_server>> nodes_;
    std::unique_ptr<sentinel_setup> sentinel_;
    std::unique_ptr<rt::cluster_deployment> cluster_;
    std::vector<std::unique_ptr<worker_process>> workers_;
    std::vector<rf::log_reader> readers_;
    std::vector<bool> ready_;
    std::vector<rf::section> sections_;
    std::vector<rf::log_line> stops_;
    std::size_t stops_before_arm_ = 0;
    std::vector<std::string> lost_;
    std::vector<std::string> release_failed_;
    std::vector<failover_record> failovers_;
    std::size_t acquire_failures_ = 0;
    std::map<std::string, std::size_t> failure_reasons_;
    std::vector<std::string> problems_;
    std::vector<std::string> stray_;
    std::vector<std::string> notes_;
    std::vector<std::pair<std::int64_t, std::int64_t>> windows_;
    std::string summary_;

  public:
    // A line printed under the scenario's table row (e.g. rates).
    void set_summary(std::string text) { summary_ = std::move(text); }
    const std::string& summary() const { return summary_; }
};

// ---- engineered parts ----

// The stopped holder must stay alone for a while (but never past its validity).
steady::time_point safe_hold_limit(const stop_event& e)
{
    return std::min(steady::now() + safe_hold, e.until() - validity_margin);
}

// Holds worker 0 inside its critical section while `fault` acts on the nodes; `undo` runs
// before it is resumed. Used by safe scenarios: no rival may get in.
void hold_alone(run& r, const std::function<void(run&, const stop_event&)>& fault = {},
                const std::function<void(run&)>& undo = {})
{
    const stop_event e = r.stop_holder();
    if (fault)
        fault(r, e);
    if (r.wait_rival(e, safe_hold_limit(e)))
        r.note("a rival entered " + e.key + " while worker 0 held it");
    if (undo)
        undo(r);
    r.resume_holder(e);
}

// Holds worker 0 while `fault` acts, until a rival has run a critical section on its key or
// `limit(e)` passes. Used by unsafe scenarios.
void hold_until_rival(run& r, const std::function<void(run&, const stop_event&)>& fault,
                      const std::function<steady::time_point(const stop_event&)>& limit)
{
    const stop_event e = r.stop_holder();
    if (fault)
        fault(r, e);
    if (!r.wait_rival(e, limit(e)))
        r.note("no rival entered " + e.key + " while worker 0 was stopped");
    r.resume_holder(e);
}

steady::time_point before_validity_ends(const stop_event& e)
{
    return e.until() - validity_margin;
}

void kill_and_restart(run& r, const std::vector<std::size_t>& which)
{
    // Crash them all first, then bring them back: a simultaneous failure, not a rolling one.
    for (auto i : which)
        r.node(i).kill();
    for (auto i : which)
        r.node(i).restart();
}

std::vector<std::size_t> first(std::vector<std::size_t> v, std::size_t n)
{
    v.resize(std::min(n, v.size()));
    return v;
}

// ---- background faults (each runs until `until`, leaving every node up) ----

void sleep_bounded(ms d, steady::time_point until)
{
    sleep_until(std::min(steady::now() + d, until));
}

void background_sigstop(run& r, steady::time_point until)
{
    while (steady::now() < until) {
        const auto victims = r.random_nodes(2);  // a minority: the lock stays available
        for (auto i : victims)
            r.node(i).pause();
        sleep_bounded(300ms, until);
        for (auto i : victims)
            r.node(i).resume();
        sleep_bounded(200ms, until);
    }
}

void background_restarts(run& r, steady::time_point until)
{
    while (steady::now() < until) {
        kill_and_restart(r, r.random_nodes(quorum));  // a majority
        sleep_bounded(600ms, until);
    }
}

// Without persistence a restarted node has forgotten its locks; waiting out the longest TTL
// before it rejoins makes that harmless (the Redlock paper's delayed restart).
void background_restart_delayed(run& r, steady::time_point until)
{
    while (steady::now() < until) {
        const auto victims = r.random_nodes(quorum);
        for (auto i : victims)
            r.node(i).kill();
        sleep_until(steady::now() + r.spec().expiry + restart_delay_margin);  // even past `until`
        for (auto i : victims)
            r.node(i).restart();
        sleep_bounded(1500ms, until);
    }
}

void background_client_pause(run& r, steady::time_point until)
{
    while (steady::now() < until) {
        std::uniform_int_distribution<std::size_t> how_many(1, quorum);
        for (auto i : r.random_nodes(how_many(r.rng())))
            rt::redis_command(r.node(i).port(), {"CLIENT", "PAUSE", "300", "WRITE"});
        sleep_bounded(400ms, until);
    }
}

void background_client_kill(run& r, steady::time_point until)
{
    while (steady::now() < until) {
        std::uniform_int_distribution<std::size_t> how_many(1, node_count);
        for (auto i : r.random_nodes(how_many(r.rng())))
            rt::redis_command(r.node(i).port(), {"CLIENT", "KILL", "TYPE", "normal"});
        sleep_bounded(250ms, until);
    }
}

// ---- one node silent for a while ----
//
// A node that stops answering (SIGSTOP) while workers run: a minority, so the lock must stay
// safe and keep being granted. Its rate may drop while the node is silent (requests to it
// wait out their per-node deadline); the scenario prints the rates before, during and after
// and asserts only safety and that acquisitions go on while the node is stopped.

void background_one_node_stopped(run& r, steady::time_point until)
{
    const auto now = steady::now();
    const auto span = until - now;
    sleep_until(now + span / 4);
    const std::size_t victim = r.random_nodes(1).front();
    r.node(victim).pause();
    const std::int64_t began = monotonic_ns();
    r.note("node " + std::to_string(victim) + " stopped");
    sleep_until(now + span * 3 / 4);
    r.node(victim).resume();
    r.fault_windows().emplace_back(began, monotonic_ns());
    sleep_until(until);
}

std::vector<std::string> progress_while_stopped(run& r)
{
    std::int64_t stopped_ns = 0;
    for (const auto& [b, e] : r.fault_windows())
        stopped_ns += e - b;
    const std::int64_t first = to_monotonic(r.start());
    const std::int64_t last = to_monotonic(r.end());
    std::size_t before = 0, during = 0, after = 0;
    for (const auto& s : r.sections()) {
        const bool in = std::any_of(
            r.fault_windows().begin(), r.fault_windows().end(),
            [&](const auto& w) { return s.start_ns >= w.first && s.start_ns < w.second; });
        if (in)
            ++during;
        else if (!r.fault_windows().empty() && s.start_ns < r.fault_windows().front().first)
            ++before;
        else
            ++after;
    }
    // Before: from the run's start to the first stop; after: the rest of the run.
    const double before_s =
        r.fault_windows().empty() ? 0 : (r.fault_windows().front().first - first) / 1e9;
    const double during_s = static_cast<double>(stopped_ns) / 1e9;
    const double after_s = static_cast<double>(last - first - stopped_ns) / 1e9 - before_s;
    auto rate = [](std::size_t n, double secs) {
        return secs > 0 ? std::to_string(static_cast<long>(static_cast<double>(n) / secs + 0.5))
                        : std::string("-");
    };
    r.set_summary("acquisitions/s with every node up " + rate(before, before_s) +
                  ", with one node stopped " + rate(during, during_s) + " (" +
                  std::to_string(during) + " in " + std::to_string(stopped_ns / 1'000'000) +
                  " ms), after it resumed " + rate(after, after_s));
    if (r.fault_windows().empty())
        return {"the node was never stopped"};
    if (during == 0)
        return {"no critical section began while one node of five was stopped"};
    return {};
}

// ---- a fast clock on node 0 ----
//
// A node whose clock runs x10 expires its copy of a key ten times too early. Whether that is
// survivable depends on where else the holder's key is: the holder is safe while a quorum of
// normal nodes keeps it, and it usually does (its SET reaches all five). But an acquisition
// that won with a bare quorum, e.g. because a contender's split vote still occupied two nodes,
// and that counts the fast node in it, is left with a minority once that copy expires; a
// rival then takes the fast node and the two others. One bad clock out of five is enough.

constexpr std::size_t fast_node = 0;
constexpr int precondition_attempts = 10;

std::size_t normal_holders(run& r, const stop_event& e)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < node_count; ++i)
        n += i != fast_node && r.holds(i, e) ? 1 : 0;
    return n;
}

// Safe: worker 0 held on a quorum of normal nodes; the fast node's copy expires, nobody gets in.
// A stop where worker 0 won with a bare quorum that counts the fast node is the unsafe case
// below: it is resumed at once (within a millisecond, far inside the fast node's TTL) and the
// stop is tried again.
void fast_node_outvoted(run& r)
{
    for (int attempt = 1;; ++attempt) {
        const stop_event e = r.stop_holder();
        if (normal_holders(r, e) >= quorum) {
            if (r.wait_rival(e, safe_hold_limit(e)))
                r.note("a rival entered " + e.key + " while worker 0 held it");
            if (r.holds(fast_node, e))
                throw std::runtime_error(
                    "the x10 node still holds the key after the hold: "
                    "its clock did not run fast");
            r.resume_holder(e);
            return;
        }
        r.note("worker 0 held a bare quorum with the fast node; stopped it again");
        r.resume_holder(e);
        if (attempt == precondition_attempts)
            throw std::runtime_error("worker 0 never held a quorum of normal nodes in " +
                                     std::to_string(attempt) + " stops");
    }
}

// Keys left by a contender whose attempt failed (a split vote) and that it has not yet deleted.
const std::string leftover = "leftover-of-a-split-vote";

// Unsafe: the same fault, when worker 0 won with a bare quorum that counts the fast node. The
// bare quorum is arranged by a split vote's leftovers on two normal nodes; they are cleaned up
// while worker 0 holds, as their owner would.
void fast_node_in_a_bare_quorum(run& r)
{
    const std::vector<std::size_t> occupied = {3, 4};
    auto clean_up = [&] {
        for (auto i : occupied)
            for (const auto& k : lock_keys)
                rt::redis_command(r.node(i).port(),
                                  {"EVAL",
                                   "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                                   "return redis.call('DEL', KEYS[1]) end return 0",
                                   "1", k, leftover});
    };
    for (int attempt = 1;; ++attempt) {
        // Each key is free on a node within milliseconds (sections last ~2 ms): retry NX.
        const auto deadline = steady::now() + 5s;
        for (auto i : occupied)
            for (const auto& k : lock_keys)
                while (rt::redis_command(r.node(i).port(),
                                         {"SET", k, leftover, "NX", "PX", "5000"}) != "OK")
                    if (steady::now() >= deadline)
                        throw std::runtime_error("could not place the leftover keys");
        const stop_event e = r.stop_holder();
        const bool bare = r.holds(1, e) && r.holds(2, e);  // and 0, unless expired already
        clean_up();
        if (bare) {
            if (!r.wait_rival(e, before_validity_ends(e)))
                r.note("no rival entered " + e.key + " while worker 0 was stopped");
            r.resume_holder(e);
            return;
        }
        r.note("worker 0 did not hold nodes 1 and 2; stopped it again");
        r.resume_holder(e);
        if (attempt == precondition_attempts)
            throw std::runtime_error("worker 0 never won the bare quorum in " +
                                     std::to_string(attempt) + " stops");
    }
}

// ---- failovers of a deployment that is the only node ----
//
// The lock node is a master with a replica (Sentinel's, or a cluster master's), and
// replication is asynchronous: a key set on the master a moment before it fails may never
// reach the replica that is promoted, and then a second owner gets the lock that its first
// owner still holds. The engineered part makes that deterministic, as
// tests/integration/test_sentinel.cpp does: the replica is stopped and its link cut (CLIENT
// KILL TYPE replica) before worker 0 requests its lock, so that the lock exists only on the
// master; the master is killed and the replica promoted; a rival must get in. With
// wait_for_replicas = 1 worker 0 gets no lock at all while the replica is cut off, and its
// first one comes after the failover. The background part forces failovers while worker 0
// holds a lock (requested before the failover, so normally on the replica too) and the others
// contend. Whether a second owner gets in then depends on timing (a lock granted by the old
// master between the promotion and the moment the clients leave it, or set just before a
// kill), so it is counted per failover and printed, not asserted. Asserted: no fenced update
// lost, and locking resumes within failover_resume_limit of every failover.

constexpr ms failover_resume_limit = 10s;
// How long worker 0, armed, keeps trying while the replica is cut off (wait_for_replicas 1:
// every try must be refused).
constexpr ms cut_off_window = 1000ms;
// Without replica acknowledgement, worker 0 requests its lock this long after the replica was
// cut off. A lock held at the cut and released after it stays on the replica (the release never
// reaches it) until its TTL runs out, and after the promotion keeps everybody out of its key:
// if that key is worker 0's, its rival can get in only once that copy has expired, which is
// then at least this long (less the drift allowance) before worker 0's validity ends.
constexpr ms holder_lead = 1500ms;
// Per run after the engineered one; ten times as many in the soak profile.
constexpr int sentinel_background_failovers = 2;
constexpr int cluster_background_failovers = 1;
// Critical sections the workers run after a failover before the next fault.
constexpr std::size_t sections_between_failovers = 50;

int repeat(run& r, int n)
{
    return r.soak() ? n * 10 : n;
}

// Waits until locking has resumed after failover `f` (a critical section began after its
// ready_ns), bounded, and records it; then lets the workers contend for a while (a number of
// sections, not a time) before the next fault.
void record_failover(run& r, failover_record f)
{
    f.resumed_ns = r.wait_section_after(f.ready_ns, failover_resume_limit,
                                        "locking to resume after a failover");
    r.failovers().push_back(f);
    r.wait_for(
        [&] {
            return static_cast<std::size_t>(std::count_if(r.sections().begin(), r.sections().end(),
                                                          [&](const rf::section& s) {
                                                              return s.start_ns > f.ready_ns;
                                                          })) >= sections_between_failovers;
        },
        failover_resume_limit, "the workers to contend again after a failover");
}

// Forces a Sentinel failover while worker 0 holds a lock on the master, and records it; the
// former master is a replica of the new one afterwards.
void sentinel_failover_while_held(run& r)
{
    sentinel_setup& d = r.sentinel();
    d.wait_streaming();  // a replica that is still synchronising would lose everything
    const stop_event e = r.stop_holder();
    failover_record f;
    std::tie(f.forced_ns, f.switched_ns) = d.fail_over();
    d.demote_former_master();
    f.ready_ns = monotonic_ns();
    if (r.wait_rival(e, steady::now()))
        r.note("failover " + std::to_string(r.failovers().size() + 1) + ": a rival entered " +
               e.key + " while worker 0 held it");
    r.resume_holder(e);
    record_failover(r, f);
}

void sentinel_failovers(run& r, steady::time_point)
{
    for (int i = 0; i < repeat(r, sentinel_background_failovers); ++i)
        sentinel_failover_while_held(r);
    r.end_now();
}

// The engineered part: a lock that only the master had, and a failover that loses it.
void sentinel_lock_only_on_the_master(run& r)
{
    sentinel_setup& d = r.sentinel();
    const bool acknowledged = r.spec().wait_for_replicas > 0;
    d.wait_streaming();
    // Stopped, and cut off: what the master wrote to the link before would otherwise still
    // reach the replica from the kernel's buffers when it resumes.
    d.replica().pause();
    const std::string cut =
        rt::redis_command(d.master().port(), {"CLIENT", "KILL", "TYPE", "replica"});
    if (cut != "1")
        throw std::runtime_error("CLIENT KILL TYPE replica on the master: " + cut);
    if (!acknowledged)
        sleep_until(steady::now() + holder_lead);
    r.arm_holder();
    std::optional<stop_event> e =
        r.await_holder(steady::now() + (acknowledged ? cut_off_window : stop_timeout));
    if (!e && !acknowledged)
        throw std::runtime_error("worker 0 did not stop inside a critical section within " +
                                 std::to_string(stop_timeout.count()) + " ms");
    if (e && acknowledged)
        r.fail("worker 0 got " + e->key + " with wait_for_replicas " +
               std::to_string(r.spec().wait_for_replicas) + " while the replica was cut off");
    failover_record f{.engineered = true};
    d.master().kill();
    f.forced_ns = monotonic_ns();
    d.replica().resume();
    f.switched_ns = d.fail_over().second;
    f.ready_ns = f.switched_ns;  // the former master is dead
    if (e) {
        if (rt::redis_get(d.master().port(), e->key) == e->owner)
            throw std::runtime_error("worker 0's lock reached the replica although it was cut off");
        if (!r.wait_rival(*e, before_validity_ends(*e)))
            r.note("no rival entered " + e->key + " after the failover that lost worker 0's lock");
        r.resume_holder(*e);
    }
    d.demote_former_master();  // restarted empty, as a replica of the new master
    if (!e) {
        // Still armed: its first lock comes once the new master has a replica to wait for.
        const auto later = r.await_holder(steady::now() + stop_timeout);
        if (!later)
            throw std::runtime_error("worker 0 got no lock within " +
                                     std::to_string(stop_timeout.count()) +
                                     " ms after the failover");
        if (later->start_ns < f.switched_ns)
            r.fail("worker 0's first lock after the cut began before the failover was complete");
        r.resume_holder(*later);
    }
    record_failover(r, f);
}

// The server that replicates `master` (ROLE: "slave 127.0.0.1 PORT connected OFFSET").
std::size_t replica_of(rt::cluster_deployment& d, std::size_t master)
{
    const std::string prefix = "slave 127.0.0.1 " + std::to_string(d[master].port()) + " ";
    for (std::size_t i = 0; i < d.size(); ++i)
        if (i != master && d[i].running() && !d[i].paused() &&
            rt::redis_command(d[i].port(), {"ROLE"}).starts_with(prefix))
            return i;
    throw std::runtime_error("no replica of cluster server " + std::to_string(master));
}

std::uint16_t lock_slot(run& r)
{
    return rt::cluster_deployment::slot_of(r.spec().keys.front());
}

// A key of the lock keys' slot (they share a hash tag) to move the replication offset with.
std::string streams_key(run& r)
{
    return r.spec().keys.front() + ":replica-streams";
}

// Restarts the killed `former` master (empty: no persistence); the cluster makes it a replica
// of the server that took its slots. Returns once `master` streams to it.
void rejoin_as_replica(run& r, std::size_t former, std::size_t master)
{
    rt::cluster_deployment& d = r.cluster();
    d[former].restart();
    const std::string prefix = "slave 127.0.0.1 " + std::to_string(d[master].port()) + " connected";
    poll_until(
        [&] {
            return rt::redis_command(d[former].port(), {"ROLE"}).starts_with(prefix) &&
                   replica_streams(d[master].port(), streams_key(r));
        },
        deployment_timeout,
        "cluster server " + std::to_string(former) + " to rejoin as a replica of " +
            std::to_string(master));
}

// Kills the master of the lock keys' slot while worker 0 holds a lock there, and promotes its
// replica (CLUSTER FAILOVER TAKEOVER); then, if `rejoin`, the former master rejoins as a
// replica (for the next failover).
void cluster_failover_while_held(run& r, bool rejoin)
{
    rt::cluster_deployment& d = r.cluster();
    const std::size_t master = *d.owner_of_slot(lock_slot(r));
    const std::size_t replica = replica_of(d, master);
    poll_until([&] { return replica_streams(d[master].port(), streams_key(r)); },
               deployment_timeout, "the master to stream to its replica");
    const stop_event e = r.stop_holder();
    failover_record f;
    d[master].kill();
    f.forced_ns = monotonic_ns();
    d.promote_after_master_killed(replica);
    f.switched_ns = f.ready_ns = monotonic_ns();
    if (r.wait_rival(e, steady::now()))
        r.note("failover " + std::to_string(r.failovers().size() + 1) + ": a rival entered " +
               e.key + " while worker 0 held it");
    r.resume_holder(e);
    record_failover(r, f);
    if (rejoin)
        rejoin_as_replica(r, master, replica);
}

void cluster_failovers(run& r, steady::time_point)
{
    const int n = repeat(r, cluster_background_failovers);
    for (int i = 0; i < n; ++i)
        cluster_failover_while_held(r, i + 1 < n);
    r.end_now();
}

// The engineered part: the replica cut off, a lock only on the master, the master killed.
void cluster_lock_only_on_the_master(run& r)
{
    rt::cluster_deployment& d = r.cluster();
    const std::size_t master = *d.owner_of_slot(lock_slot(r));
    const std::size_t replica = replica_of(d, master);
    poll_until([&] { return replica_streams(d[master].port(), streams_key(r)); },
               deployment_timeout, "the master to stream to its replica");
    d[replica].pause();
    const std::string cut =
        rt::redis_command(d[master].port(), {"CLIENT", "KILL", "TYPE", "replica"});
    if (cut != "1")
        throw std::runtime_error("CLIENT KILL TYPE replica on the master: " + cut);
    sleep_until(steady::now() + holder_lead);
    const stop_event e = r.stop_holder();
    failover_record f{.engineered = true};
    d[master].kill();
    f.forced_ns = monotonic_ns();
    d[replica].resume();
    d.promote_after_master_killed(replica);
    f.switched_ns = f.ready_ns = monotonic_ns();
    if (rt::redis_get(d[replica].port(), e.key) == e.owner)
        throw std::runtime_error("worker 0's lock reached the replica although it was cut off");
    if (!r.wait_rival(e, before_validity_ends(e)))
        r.note("no rival entered " + e.key + " after the failover that lost worker 0's lock");
    r.resume_holder(e);
    record_failover(r, f);
    rejoin_as_replica(r, master, replica);
}

// Prints, per failover (the engineered one first): how many locks got a second owner (held
// sections that another owner's section overlapped, counted at the failover before the later
// one began; a stopped holder overlapped by many sections of its rivals counts once), how long
// until the new master was in charge, and until locking resumed; checks that it resumed within
// the limit after each.
std::vector<std::string> failover_summary(run& r)
{
    const auto& fs = r.failovers();
    std::vector<std::string> problems;
    if (fs.empty())
        return {"no failover happened"};
    std::vector<std::set<const rf::section*>> owned_twice(fs.size());
    std::set<const rf::section*> before;
    const auto overlaps = rf::find_overlaps(r.sections());
    for (const auto& o : overlaps) {
        std::size_t i = fs.size();
        while (i > 0 && o.later->start_ns < fs[i - 1].forced_ns)
            --i;
        (i == 0 ? before : owned_twice[i - 1]).insert(o.earlier);
    }
    auto ms_between = [](std::int64_t a, std::int64_t b) {
        return std::to_string((b - a) / 1'000'000);
    };
    std::string second, took, resumed;
    std::size_t background_owners = 0;
    for (std::size_t i = 0; i < fs.size(); ++i) {
        const char* sep = i == 0 ? "" : (fs[i - 1].engineered && !fs[i].engineered ? " | " : " ");
        second += sep + std::to_string(owned_twice[i].size());
        took += sep + ms_between(fs[i].forced_ns, fs[i].switched_ns);
        resumed += sep + ms_between(fs[i].forced_ns, fs[i].resumed_ns);
        background_owners += fs[i].engineered ? 0 : owned_twice[i].size();
        const auto wait = std::chrono::nanoseconds(fs[i].resumed_ns - fs[i].ready_ns);
        if (wait > failover_resume_limit)
            problems.push_back("locking resumed only " +
                               ms_between(fs[i].ready_ns, fs[i].resumed_ns) +
                               " ms after failover " + std::to_string(i + 1));
    }
    const bool engineered = fs.front().engineered;
    const std::size_t background = fs.size() - (engineered ? 1 : 0);
    char mean[32] = "-";
    if (background > 0)
        std::snprintf(mean, sizeof mean, "%.2f",
                      static_cast<double>(background_owners) / static_cast<double>(background));
    r.set_summary(std::to_string(fs.size()) + " failovers" +
                  (engineered ? " (engineered | while held)" : "") +
                  ": locks that got a second owner " + second + " (" + mean +
                  " per failover while held" +
                  (before.empty() ? "" : ", " + std::to_string(before.size()) + " before any") +
                  "; " + std::to_string(overlaps.size()) +
                  " overlapping sections in all); new master in charge after " + took +
                  " ms; locking resumed " + resumed + " ms after the failover began");
    return problems;
}

// ---- a cluster slot that moves while its locks are held ----
//
// Three masters; the workers lock two keys of one slot (one hash tag) with the watchdog on
// (a 900 ms expiry, extended about every 300 ms) and hold each lock 700 ms, while the driver
// moves the slot from master to master as redis-cli --cluster reshard does: CLUSTER SETSLOT
// IMPORTING/MIGRATING, MIGRATE of its keys (lock keys and fencing counters, with their TTLs),
// then SETSLOT NODE. The locks held when a move begins are extended and released through ASK
// (the move waits until their holders have finished their sections), later ones through
// MOVED. None may be reported lost or found gone at release, none may overlap, and locking
// must go on after every move. While the slot is half moved, acquiring a free lock is refused
// with TRYAGAIN: the acquire script touches the lock key and its fencing counter, and Redis
// refuses a script over several keys of a migrating slot when one of them (here the lock key,
// which the script is about to create) does not exist. The sections begun meanwhile (locks
// acquired just before a move began, mostly) are counted, not required.

constexpr int slot_migrations = 6;  // twice round the three masters
constexpr ms migration_progress_limit = 5s;

void migrate_the_slot(run& r, steady::time_point)
{
    rt::cluster_deployment& d = r.cluster();
    const std::uint16_t slot = lock_slot(r);
    std::size_t from = *d.owner_of_slot(slot);
    const std::string name = "slot " + std::to_string(slot);
    for (int i = 0; i < repeat(r, slot_migrations); ++i) {
        const std::size_t to = (from + 1) % 3;
        // The locks held as the move begins: their holders must finish through ASK.
        std::vector<std::string> held;
        for (const auto& k : r.spec().keys)
            if (auto owner = rt::redis_get(d[from].port(), k))
                held.push_back(*owner);
        const std::int64_t began = monotonic_ns();
        d.begin_slot_migration(slot, from, to);
        d.migrate_keys(slot, from, to);
        const std::int64_t moved = monotonic_ns();
        r.wait_for(
            [&] {
                return std::all_of(held.begin(), held.end(), [&](const std::string& owner) {
                    return std::any_of(r.sections().begin(), r.sections().end(),
                                       [&](const rf::section& s) { return s.owner == owner; });
                });
            },
            migration_progress_limit,
            "the locks held as " + name + " began to move to finish their sections");
        const std::int64_t finishing = monotonic_ns();
        d.finish_slot_migration(slot, to);
        const std::int64_t finished = monotonic_ns();
        r.fault_windows().emplace_back(began, finishing);  // half moved
        r.note(name + " from server " + std::to_string(from) + " to " + std::to_string(to) +
               ": began at " + std::to_string(began / 1'000'000) + " ms, keys moved at " +
               std::to_string(moved / 1'000'000) + " ms, finished at " +
               std::to_string(finished / 1'000'000) + " ms");
        r.wait_section_after(finished, migration_progress_limit,
                             "a critical section to begin after " + name + " moved");
        from = to;
    }
    r.end_now();
}

// Nothing took a lock away here: a lock reported lost, or a release that found it gone, is
// the client's mistake.
std::vector<std::string> no_lock_lost(run& r)
{
    std::vector<std::string> problems;
    for (const auto* list : {&r.lost(), &r.release_failed()})
        for (std::size_t i = 0; i < list->size() && i < 5; ++i)
            problems.push_back("no fault took the lock away, yet " + (*list)[i]);
    std::size_t across = 0, during = 0;
    for (const auto& s : r.sections())
        for (const auto& [b, e] : r.fault_windows()) {
            across += s.start_ns < b && s.end_ns > b ? 1 : 0;
            during += s.start_ns >= b && s.start_ns < e ? 1 : 0;
        }
    std::int64_t moving_ns = 0;
    for (const auto& [b, e] : r.fault_windows())
        moving_ns += e - b;
    r.set_summary(std::to_string(r.fault_windows().size()) + " moves of the slot (half moved " +
                  std::to_string(moving_ns / 1'000'000) + " ms in all): " + std::to_string(across) +
                  " locks held into a move, " + std::to_string(during) +
                  " begun while half moved; " + std::to_string(r.lost().size()) +
                  " reported lost, " + std::to_string(r.release_failed().size()) +
                  " releases that found them gone");
    if (r.fault_windows().empty())
        problems.push_back("the slot never moved");
    return problems;
}

// ---- the scenarios ----

// Expiry in the failover scenarios. The engineered part's rival must get in within the
// holder's validity: after the kill, the promotion and the clients' switch (1 to 2 s with
// Sentinels), or once a copy of the key left on the replica has expired (see holder_lead).
// Longer would keep keys whose release went to the old master blocked longer after each
// failover (until their TTL runs out).
constexpr ms deployment_expiry = 4000ms;
// A cap: these scenarios end when their faults are done (end_now).
constexpr ms deployment_cap = 60s;
// Lock keys of one cluster slot (one hash tag).
const std::vector<std::string> slot_keys = {"{lock}:a", "{lock}:b"};

std::vector<scenario> scenarios()
{
    const std::vector<std::string> aof_always = {"--appendonly", "yes", "--appendfsync", "always"};
    return {
        {.name = "baseline",
         .expect = {.safe = true},
         .duration = 4000ms,
         .engineered = [](run& r) { hold_alone(r); }},
        {.name = "node-sigstop",
         .expect = {.safe = true},
         .engineered =
             [](run& r) {
                 std::vector<std::size_t> stopped;
                 hold_alone(
                     r,
                     [&](run& r, const stop_event& e) {
                         // Silence a minority of the holder's nodes: the rest still refuse.
                         stopped = first(r.holders_first(e), quorum - 1);
                         for (auto i : stopped)
                             r.node(i).pause();
                     },
                     [&](run& r) {
                         for (auto i : stopped)
                             r.node(i).resume();
                     });
             },
         .background = background_sigstop},
        {.name = "restart-aof-always",
         .expect = {.safe = true},
         .node_args = aof_always,
         .engineered =
             [](run& r) {
                 hold_alone(r, [](run& r, const stop_event& e) {
                     const auto victims = first(r.holders_first(e), quorum);
                     kill_and_restart(r, victims);
                     // Otherwise nobody getting in could just mean the nodes were not back.
                     for (auto i : victims)
                         if (!r.holds(i, e))
                             throw std::runtime_error("node " + std::to_string(i) +
                                                      " lost the holder's key in a restart "
                                                      "despite appendfsync always");
                 });
             },
         .background = background_restarts},
        {.name = "restart-delayed",
         .expect = {.safe = true},
         .engineered =
             [](run& r) {
                 // As restart-at-once, but the crashed nodes return only once every key they
                 // held has expired, so after the holder's validity: it stays alone to the end.
                 const stop_event e = r.stop_holder();
                 const auto victims = first(r.holders_first(e), quorum);
                 for (auto i : victims)
                     r.node(i).kill();
                 const auto killed = steady::now();
                 if (r.wait_rival(e, before_validity_ends(e)))
                     r.note("a rival entered " + e.key + " while a majority was down");
                 r.resume_holder(e);
                 sleep_until(killed + r.spec().expiry + restart_delay_margin);
                 for (auto i : victims)
                     r.node(i).restart();
             },
         .background = background_restart_delayed},
        {.name = "restart-at-once",
         .expect = {.safe = false, .lock_broken = true},
         .expiry = 3000ms,
         .engineered =
             [](run& r) {
                 hold_until_rival(
                     r,
                     [](run& r, const stop_event& e) {
                         kill_and_restart(r, first(r.holders_first(e), quorum));
                     },
                     before_validity_ends);
             }},
        {.name = "client-stop-past-ttl",
         .expect = {.safe = false, .lock_broken = false},
         .expiry = 1000ms,
         .engineered =
             [](run& r) {
                 // Stopped past its TTL: the lock expires and passes on; the holder's late
                 // write must be refused.
                 hold_until_rival(r, {}, [](const stop_event& e) { return e.until() + 5s; });
             }},
        {.name = "client-pause-cmd",
         .expect = {.safe = true},
         .engineered =
             [](run& r) {
                 hold_alone(r, [](run& r, const stop_event& e) {
                     // Writes stall on a majority, the holder's key among them; its TTL keeps
                     // running on the others.
                     for (auto i : first(r.holders_first(e), quorum))
                         rt::redis_command(r.node(i).port(), {"CLIENT", "PAUSE", "1000", "WRITE"});
                 });
             },
         .background = background_client_pause},
        {.name = "client-kill",
         .expect = {.safe = true},
         .engineered =
             [](run& r) {
                 hold_alone(r, [](run& r, const stop_event&) {
                     for (std::size_t i = 0; i < node_count; ++i)
                         rt::redis_command(r.node(i).port(), {"CLIENT", "KILL", "TYPE", "normal"});
                 });
             },
         .background = background_client_kill},
        {.name = "node-stopped-a-while",
         .expect = {.safe = true},
         .duration = 6000ms,
         .background = background_one_node_stopped,
         .verify = progress_while_stopped},
        {.name = "fast-clock-1-of-5",
         .expect = {.safe = true},
         .expiry = 3000ms,  // the fast node keeps a key 300 ms: far longer than any section
         .fast_clock_nodes = 1,
         .engineered = fast_node_outvoted},
        {.name = "fast-clock-1-bare-quorum",
         .expect = {.safe = false, .lock_broken = true},
         .expiry = 3000ms,
         .fast_clock_nodes = 1,
         .engineered = fast_node_in_a_bare_quorum},
        {.name = "fast-clock-3-of-5",
         .expect = {.safe = false, .lock_broken = true},
         .expiry = 3000ms,
         .fast_clock_nodes = 3,
         .engineered = [](run& r) { hold_until_rival(r, {}, before_validity_ends); }},
        // The deployment scenarios end once their faults are done (the duration is a cap).
        {.name = "sentinel-failover-wait-0",
         .expect = {.safe = false, .lock_broken = true},
         .expiry = deployment_expiry,
         .duration = deployment_cap,
         .engineered = sentinel_lock_only_on_the_master,
         .background = sentinel_failovers,
         .verify = failover_summary,
         .node = lock_node::sentinel},
        {.name = "sentinel-failover-wait-1",
         .expect = {.shown = true},
         .expiry = deployment_expiry,
         .duration = deployment_cap,
         .engineered = sentinel_lock_only_on_the_master,
         .background = sentinel_failovers,
         .verify = failover_summary,
         .node = lock_node::sentinel,
         .wait_for_replicas = 1},
        {.name = "cluster-slot-migration",
         .expect = {.safe = true},
         .expiry = 900ms,
         .duration = deployment_cap,
         .background = migrate_the_slot,
         .verify = no_lock_lost,
         .node = lock_node::cluster,
         .keys = slot_keys,
         .auto_extend = true,
         .work = 700ms},
        {.name = "cluster-master-failover",
         .expect = {.safe = false, .lock_broken = true},
         .expiry = deployment_expiry,
         .duration = deployment_cap,
         .engineered = cluster_lock_only_on_the_master,
         .background = cluster_failovers,
         .verify = failover_summary,
         .node = lock_node::cluster_with_replicas,
         .keys = slot_keys},
    };
}

// ---- running one scenario ----

struct suite_clock
{
    suite_clock() : start(steady::now()) {}
    ~suite_clock()
    {
        const double s = std::chrono::duration<double>(steady::now() - start).count();
        std::cout << "fault suite: " << rows << " scenario(s) in " << static_cast<int>(s + 0.5)
                  << " s (" << (soak_requested() ? "soak" : "CI") << " profile, seed "
                  << base_seed() << ")\n"
                  << std::flush;
    }
    steady::time_point start;
    static inline int rows = 0;
};
BOOST_TEST_GLOBAL_FIXTURE(suite_clock);

void print_row(const std::string& row)
{
    if (suite_clock::rows++ == 0)
        std::cout << rf::table_header();
    std::cout << row << std::flush;
}

std::string describe(const rf::section& s)
{
    return "worker " + std::to_string(s.worker) + " token " + std::to_string(s.token) + " [" +
           std::to_string(s.start_ns / 1'000'000) + ", " + std::to_string(s.end_ns / 1'000'000) +
           "] ms until " + std::to_string(s.until_ns / 1'000'000) + " read " +
           std::string(rf::to_string(s.read)) + " write " + std::string(rf::to_string(s.write));
}

void run_scenario(const std::string& name)
{
    const auto all = scenarios();
    const auto it =
        std::find_if(all.begin(), all.end(), [&](const scenario& s) { return s.name == name; });
    BOOST_REQUIRE(it != all.end());
    const scenario& s = *it;
    const bool soak = soak_requested();
    const unsigned seed = base_seed() + static_cast<unsigned>(std::distance(all.begin(), it)) * 100;

    run r(s, soak, seed);
    const auto started = steady::now();
    std::vector<std::string> problems;
    try {
        do {
            // Near the end worker 0 may finish its run instead of stopping when armed.
            if (s.engineered && r.end() - steady::now() > engineered_lead)
                s.engineered(r);
            const auto slice_end = soak ? std::min(r.end(), steady::now() + 10s) : r.end();
            if (s.background)
                s.background(r, slice_end);
            else
                sleep_until(slice_end);
        } while (soak && steady::now() < r.end());
    } catch (const std::exception& e) {
        problems.push_back(std::string("schedule: ") + e.what());
    }
    if (s.node != lock_node::five_servers)
        r.end_now();  // also after a failed schedule: the duration is only a cap
    r.finish();
    problems.insert(problems.end(), r.problems().begin(), r.problems().end());
    if (s.verify) {
        auto more = s.verify(r);
        problems.insert(problems.end(), more.begin(), more.end());
    }

    if (std::getenv("REDLOCK_FAULTS_KEEP_LOGS"))
        std::cerr << s.name << ": logs in " << r.dir() << "\n";
    const rf::tally t = rf::count(r.sections(), r.acquire_failures(), r.finals());
    auto violated = rf::violations(t, s.expect);
    const bool passed = problems.empty() && violated.empty();
    print_row(rf::table_row(s.name, s.expect, t, passed));
    if (!r.summary().empty())
        std::cout << "  " << r.summary() << "\n" << std::flush;
    if (s.node != lock_node::five_servers)
        std::cout << "  scenario took "
                  << std::chrono::duration_cast<ms>(steady::now() - started).count()
                  << " ms after the deployment was up\n"
                  << std::flush;

    for (const auto& p : problems)
        BOOST_ERROR(s.name << ": " << p);
    for (const auto& v : violated)
        BOOST_ERROR(s.name << ": " << v);
    if (!passed) {
        r.keep_logs();
        std::ostringstream d;
        d << s.name << ": seed " << base_seed() << ", logs kept in " << r.dir() << "\n";
        for (const auto& n : r.notes())
            d << "  note: " << n << "\n";
        int shown = 0;
        for (const auto& o : rf::find_overlaps(r.sections())) {
            if (shown++ == 5)
                break;
            d << "  overlap on " << o.earlier->key << (o.in_validity ? " (in validity)" : "")
              << ":\n    " << describe(*o.earlier) << "\n    " << describe(*o.later) << "\n";
        }
        for (const auto& [why, n] : r.failure_reasons())
            d << "  acquire failed " << n << "x: " << why << "\n";
        for (std::size_t i = 0; i < r.stray().size() && i < 10; ++i)
            d << "  stray output: " << r.stray()[i] << "\n";
        BOOST_TEST_MESSAGE(d.str());
        std::cerr << d.str();
    }
}

// ---- scenarios with processes of their own ----

std::string join_urls(const std::vector<std::unique_ptr<rt::redis_server>>& nodes)
{
    std::string urls;
    for (const auto& n : nodes)
        urls += (urls.empty() ? "" : ",") + n->url();
    return urls;
}

// `n` fresh redis-servers.
std::vector<std::unique_ptr<rt::redis_server>> start_servers(int n)
{
    std::vector<std::unique_ptr<rt::redis_server>> nodes;
    for (int i = 0; i < n; ++i)
        nodes.push_back(std::make_unique<rt::redis_server>());
    return nodes;
}

// Reads `reader` until a line of `kind` appears and returns it; throws after `limit`, or when
// the worker ends or reports a fatal error first.
rf::log_line wait_line(rf::log_reader& reader, worker_process& w, std::string_view kind, ms limit)
{
    const auto deadline = steady::now() + limit;
    for (;;) {
        for (const auto& text : reader.new_lines()) {
            auto line = rf::parse_line(text);
            if (line && line->kind == kind)
                return *line;
            if (line && line->kind == "fatal")
                throw std::runtime_error("worker: " + text);
        }
        if (w.wait_exit(steady::now()))
            throw std::runtime_error("worker ended (" + w.describe_status() + ") before its " +
                                     std::string(kind) + " line");
        if (steady::now() >= deadline)
            throw std::runtime_error("no " + std::string(kind) + " line within " +
                                     std::to_string(limit.count()) + " ms");
        std::this_thread::sleep_for(poll_interval);
    }
}

// A failed acquire must not leave its key behind on nodes that were silent while it ran. Three
// nodes, two of them stopped (SIGSTOP) under a connected client: its attempt cannot reach a
// quorum and fails, but its SET already sits in the stopped nodes' sockets and runs the moment
// they continue. The client has to undo it then (its clean-up delete must follow the SET), or
// the key blocks every other client for the whole expiry. Allowed: a second after resuming.
constexpr ms leftover_allowance = 1000ms;
// Far longer than the allowance, so that a key left behind is still there when checked.
constexpr ms probe_expiry = 10000ms;

void stalled_majority_leaves_no_key()
{
    log_dir dir;
    auto nodes = start_servers(3);
    const std::string key = "lock:probe";
    const std::string log = dir.path + "/probe.log";
    rf::log_reader reader(log);
    worker_process w(0,
                     {REDLOCK_FAULT_WORKER, "--id", "0", "--mode", "probe", "--nodes",
                      join_urls(nodes), "--keys", key, "--expiry-ms",
                      std::to_string(probe_expiry.count()), "--duration-ms", "60000"},
                     log);
    std::vector<std::string> problems;
    std::vector<std::size_t> holding;
    std::string outcome;
    try {
        wait_line(reader, w, "connected", ready_timeout);
        nodes[1]->pause();
        nodes[2]->pause();
        w.signal(SIGUSR1);
        const auto probe = wait_line(reader, w, "probe", resume_timeout);
        outcome = std::string(probe.get("why").value_or("?"));
        if (probe.get("acquired") != "0")
            problems.push_back("the acquire succeeded with two of three nodes stopped");
        nodes[1]->resume();
        nodes[2]->resume();
        const auto resumed = steady::now();
        for (;;) {
            holding.clear();
            for (std::size_t i = 0; i < nodes.size(); ++i)
                if (rt::redis_get(nodes[i]->port(), key))
                    holding.push_back(i);
            if (holding.empty() || steady::now() >= resumed + leftover_allowance)
                break;
            std::this_thread::sleep_for(poll_interval);
        }
        for (auto i : holding)
            problems.push_back("node " + std::to_string(i) + " still holds " + key + " " +
                               std::to_string(leftover_allowance.count()) +
                               " ms after the nodes resumed (PTTL " +
                               std::to_string(rt::redis_pttl(nodes[i]->port(), key)) +
                               " ms): the failed acquire's SET outlived its clean-up");
        w.signal(SIGTERM);
        if (!w.wait_exit(steady::now() + exit_grace))
            problems.push_back("the probe did not exit after SIGTERM");
        else if (!w.exited_ok())
            problems.push_back("the probe ended with " + w.describe_status());
    } catch (const std::exception& e) {
        problems.push_back(e.what());
    }
    std::cout << "stalled-majority-failed-acquire: 2 of 3 nodes stopped, acquire failed ("
              << outcome << "); key left on " << holding.size() << " node(s) "
              << leftover_allowance.count() << " ms after they resumed  "
              << (problems.empty() ? "ok" : "FAIL") << "\n"
              << std::flush;
    if (!problems.empty())
        dir.keep = true;
    for (const auto& p : problems)
        BOOST_ERROR("stalled-majority-failed-acquire: " << p << " (logs in " << dir.path << ")");
}

// Several processes, each with several waiters on one key, must share it: while one process's
// waiters can hand the lock to each other, the others must still get their turns. No process
// may hold the key through consecutive acquisitions for longer than one expiry, and each must
// get at least 0.3 of the mean share. An even share is 1. Which process follows a run is
// random (the run's end is published, and the attempts it prompts are spread at random), so
// the share of each is a sum over runs: the short expiry (runs of about 75 ms) gives about 60
// of them in 5 s. On a loaded two-core machine the least share was 0.68 to 0.93 of the mean
// (12 runs), 0.47 to 0.79 under AddressSanitizer; without the spread, processes that lose the
// race by the order in which the release's message reaches them got 0.21 to 0.49.
constexpr int sharing_processes = 4;
constexpr int waiters_per_process = 3;
constexpr ms sharing_expiry = 300ms;
constexpr ms sharing_duration = 5000ms;
constexpr ms sharing_hold = 2ms;
constexpr double least_fair_share = 0.3;

// What worker processes in mode waiters did: their sections, failed acquisitions, and what
// went wrong with the processes themselves.
struct waiter_processes
{
    std::vector<rf::section> sections;
    std::size_t failures = 0;
    std::vector<std::string> problems;
};

// Runs `processes` workers in mode waiters (`waiters_per_process` each, on the first lock key,
// with `extra` arguments) against `nodes` for `duration`, calls `during(until)` meanwhile (a
// background fault, or nothing), and collects what they logged once they ended.
waiter_processes run_waiter_processes(log_dir& dir, const std::string& nodes, int processes,
                                      ms expiry, ms duration, const std::vector<std::string>& extra,
                                      const std::function<void(steady::time_point)>& during)
{
    std::vector<std::string> logs;
    std::vector<std::unique_ptr<worker_process>> workers;
    for (int i = 0; i < processes; ++i) {
        logs.push_back(dir.path + "/worker-" + std::to_string(i) + ".log");
        std::vector<std::string> args{REDLOCK_FAULT_WORKER,
                                      "--id",
                                      std::to_string(i),
                                      "--mode",
                                      "waiters",
                                      "--waiters",
                                      std::to_string(waiters_per_process),
                                      "--nodes",
                                      nodes,
                                      "--keys",
                                      lock_keys.front(),
                                      "--expiry-ms",
                                      std::to_string(expiry.count()),
                                      "--work-ms",
                                      std::to_string(sharing_hold.count()),
                                      "--duration-ms",
                                      std::to_string(duration.count())};
        args.insert(args.end(), extra.begin(), extra.end());
        workers.push_back(std::make_unique<worker_process>(i, std::move(args), logs.back()));
    }
    waiter_processes out;
    if (during)
        during(steady::now() + duration);
    const auto deadline = steady::now() + duration + exit_grace;
    for (auto& w : workers) {
        if (!w->wait_exit(deadline))
            out.problems.push_back("worker " + std::to_string(w->id()) + " did not exit in time");
        else if (!w->exited_ok())
            out.problems.push_back("worker " + std::to_string(w->id()) + ": " +
                                   w->describe_status());
    }
    for (std::size_t i = 0; i < logs.size(); ++i) {
        rf::log_reader reader(logs[i]);
        for (const auto& text : reader.new_lines()) {
            auto line = rf::parse_line(text);
            if (!line)
                continue;
            if (line->kind == "section") {
                if (auto s = rf::parse_section(*line, static_cast<int>(i)))
                    out.sections.push_back(std::move(*s));
                else
                    out.problems.push_back("worker " + std::to_string(i) + " (bad): " + text);
            } else if (line->kind == "acquire_failed") {
                ++out.failures;
            } else if (line->kind == "fatal") {
                out.problems.push_back("worker " + std::to_string(i) + ": " + text);
            }
        }
    }
    return out;
}

// "a/b/c" of the counts, for the line under a row.
std::string slashed(const std::vector<std::size_t>& counts)
{
    std::string out;
    for (auto n : counts)
        out += (out.empty() ? "" : "/") + std::to_string(n);
    return out;
}

void report_problems(const std::string& name, log_dir& dir, bool passed,
                     const std::vector<std::string>& problems,
                     const std::vector<std::string>& violated)
{
    if (!passed)
        dir.keep = true;
    for (const auto& p : problems)
        BOOST_ERROR(name << ": " << p << " (logs in " << dir.path << ")");
    for (const auto& v : violated)
        BOOST_ERROR(name << ": " << v << " (logs in " << dir.path << ")");
}

ms sharing_run()
{
    return soak_requested() ? sharing_duration * 10 : sharing_duration;
}

void processes_share_one_key()
{
    const std::string name = "processes-share-a-key";
    const ms duration = sharing_run();
    log_dir dir;
    auto nodes = start_servers(3);
    const auto ran = run_waiter_processes(dir, join_urls(nodes), sharing_processes, sharing_expiry,
                                          duration, {}, {});

    const rf::expectation expect{.safe = true};
    const rf::tally t = rf::count(ran.sections, ran.failures, {});
    auto violated = rf::violations(t, expect);
    const auto longest = rf::longest_same_process_run(ran.sections);
    const auto shares = rf::sections_per_process(ran.sections, sharing_processes);
    const double least = rf::least_share(shares);
    const double longest_ms = longest ? static_cast<double>(longest->span_ns()) / 1e6 : 0.0;
    if (longest && longest_ms > static_cast<double>(sharing_expiry.count()))
        violated.push_back("process " + std::to_string(longest->worker) + " held the key " +
                           std::to_string(longest->sections) + " times in a row for " +
                           std::to_string(static_cast<long>(longest_ms)) +
                           " ms, more than one expiry (" + std::to_string(sharing_expiry.count()) +
                           " ms)");
    if (least < least_fair_share)
        violated.push_back("the least served process got " + std::to_string(least) +
                           " of the mean share, less than " + std::to_string(least_fair_share));
    const bool passed = ran.problems.empty() && violated.empty();
    print_row(rf::table_row(name, expect, t, passed));
    std::cout << "  " << sharing_processes << " processes x " << waiters_per_process
              << " waiters: acquisitions per process " << slashed(shares) << " (least / mean "
              << static_cast<int>(least * 100 + 0.5) << "%), longest run by one process "
              << (longest ? longest->sections : 0) << " acquisitions in "
              << static_cast<long>(longest_ms) << " ms\n"
              << std::flush;
    report_problems(name, dir, passed, ran.problems, violated);
}

// A semaphore of 2 permits on 5 nodes (a permit needs 4 of them, docs/safety.md), four
// processes of three waiters each, while one node after another is stopped (SIGSTOP) and
// resumed: never more than 2 holders within their validity, and both permits in use at once
// at some point (it is not a mutex); every process gets permits, also while a node is stopped
// (5 - 4 = 1 node may be down).
constexpr int semaphore_permits = 2;
constexpr ms semaphore_expiry = 1000ms;

// Stops (SIGSTOP) one node after another for 400 ms, 200 ms apart, until `until`:
// `stop(i, true)` stops node i, `stop(i, false)` resumes it.
void stop_one_node_after_another(std::size_t nodes,
                                 const std::function<void(std::size_t, bool)>& stop,
                                 steady::time_point until)
{
    std::mt19937 rng(base_seed());
    std::uniform_int_distribution<std::size_t> pick(0, nodes - 1);
    while (steady::now() < until) {
        const std::size_t victim = pick(rng);
        stop(victim, true);
        sleep_bounded(400ms, until);
        stop(victim, false);
        sleep_bounded(200ms, until);
    }
}

void stop_or_resume(rt::redis_server& node, bool stop)
{
    if (stop)
        node.pause();
    else
        node.resume();
}

// Five fresh nodes, the processes of the sharing scenario with `extra` arguments, and one node
// after another stopped meanwhile.
waiter_processes run_with_nodes_stopped(log_dir& dir, const std::vector<std::string>& extra)
{
    auto nodes = start_servers(5);
    return run_waiter_processes(
        dir, join_urls(nodes), sharing_processes, semaphore_expiry, sharing_run(), extra,
        [&](steady::time_point until) {
            stop_one_node_after_another(
                nodes.size(), [&](std::size_t i, bool stop) { stop_or_resume(*nodes[i], stop); },
                until);
        });
}

// A violation for each process that never got the lock.
void require_every_process_served(const std::vector<std::size_t>& shares,
                                  std::vector<std::string>& violated)
{
    for (std::size_t i = 0; i < shares.size(); ++i)
        if (shares[i] == 0)
            violated.push_back("process " + std::to_string(i) + " never got the lock");
}

void semaphore_with_nodes_stopped()
{
    const std::string name = "semaphore-nodes-stopped";
    log_dir dir;
    const auto ran = run_with_nodes_stopped(dir, {"--permits", std::to_string(semaphore_permits)});

    const std::size_t most = rf::most_at_once_in_validity(ran.sections);
    const auto shares = rf::sections_per_process(ran.sections, sharing_processes);
    std::vector<std::string> violated;
    if (most > static_cast<std::size_t>(semaphore_permits))
        violated.push_back(std::to_string(most) + " holders at once within their validity, more " +
                           "than the " + std::to_string(semaphore_permits) + " permits");
    if (most < static_cast<std::size_t>(semaphore_permits))
        violated.push_back("never " + std::to_string(semaphore_permits) +
                           " holders at once: the permits were not shared");
    require_every_process_served(shares, violated);
    const bool passed = ran.problems.empty() && violated.empty();
    std::cout << name << ": " << semaphore_permits
              << " permits on 5 nodes, one stopped after another; " << sharing_processes
              << " processes x " << waiters_per_process << " waiters: " << ran.sections.size()
              << " permits held (per process " << slashed(shares) << "), at most " << most
              << " at once within their validity, " << ran.failures << " acquires failed  "
              << (passed ? "ok" : "FAIL") << "\n"
              << std::flush;
    report_problems(name, dir, passed, ran.problems, violated);
}

// A read-write lock on 5 nodes read 70% of the time, four processes of three waiters each,
// while one node after another is stopped and resumed: a writer is never inside with anyone
// (no overlap but of readers with readers), readers do overlap (2 or more at once within their
// validity), writers get in, and every process is served.
constexpr int rw_shared_percent = 70;

void rw_mutex_with_nodes_stopped()
{
    const std::string name = "rw-nodes-stopped";
    log_dir dir;
    const auto ran =
        run_with_nodes_stopped(dir, {"--shared-percent", std::to_string(rw_shared_percent)});

    const rf::expectation expect{.safe = true};
    const rf::tally t = rf::count(ran.sections, ran.failures, {});
    auto violated = rf::violations(t, expect);
    std::vector<rf::section> reads;
    std::copy_if(ran.sections.begin(), ran.sections.end(), std::back_inserter(reads),
                 [](const rf::section& s) { return s.shared; });
    const std::size_t writes = ran.sections.size() - reads.size();
    const std::size_t readers_at_once = rf::most_at_once_in_validity(reads);
    const auto shares = rf::sections_per_process(ran.sections, sharing_processes);
    if (readers_at_once < 2)
        violated.push_back("readers never held the lock together");
    if (writes == 0)
        violated.push_back("no writer got the lock");
    require_every_process_served(shares, violated);
    const bool passed = ran.problems.empty() && violated.empty();
    print_row(rf::table_row(name, expect, t, passed));
    std::cout << "  " << rw_shared_percent
              << "% reads, one node stopped after another: " << reads.size() << " reads, " << writes
              << " writes (per process " << slashed(shares) << "), at most " << readers_at_once
              << " readers at once within their validity\n"
              << std::flush;
    report_problems(name, dir, passed, ran.problems, violated);
}

// ---- the fair lock ----
//
// Four processes of three waiters each on a fair mutex (options::fair) on 5 nodes, every
// waiter acquiring again right after its release, for 5 s, all nodes up (fair-order) or one
// after another stopped for 400 ms (fair-node-stopped). Meanwhile the driver polls the
// queue on the nodes to learn when each acquisition had joined it; the checker counts the
// overtakings from that and the workers' call and grant moments (checker.hpp has the rule).
//
// Overtakings must be 0 in both: by docs/safety.md's ordering argument a waiter B that began
// to join after A had joined can be granted before A only by a majority of nodes on which A's
// entry is gone. Entries go only by expiring, 3 refresh periods (750 ms) after their last
// refresh on that node; A refreshes on every node at least every refresh period (250 ms) and
// a stopped node runs the refreshes queued in its socket the moment it resumes. With one node
// stopped at a time, A's entry lives on at least the 4 others, which every majority meets.
//
// Every process must be served, no exclusive holders may overlap within validity, no acquire
// may fail (the workers' `wait` is ten expiries, above the bound), and the longest wait (from
// the acquire call to the section) must stay below fair_wait_bound_ns: each of the other 11
// waiters ahead, then the waiter itself, gets one turn of at most a pause (the refresh
// period, 250 ms, equal to the default retry delay's maximum), two per-node deadlines (50 ms:
// its attempt and its release, decided by the running majority) and the hold (2 ms); none
// stops refreshing, so no entry is in the way for its lifetime: 50 + 12 * 352 = 4274 ms.
constexpr ms fair_expiry = 1000ms;
// Reads of CLOCK_MONOTONIC on different CPUs: joins closer than this are not ordered.
constexpr std::int64_t fair_clock_margin_ns = 100'000;
constexpr ms fair_poll_pause = 1ms;
const std::string fair_states_key = "redlock:queue-state:" + lock_keys.front();

// Polls the fair queue's entry states on the nodes (a thread of its own) and notes, per owner
// value, the moment by which its entry had been seen committed on a majority. Stops and
// resumes nodes itself (`stop`), so that it never asks a stopped node, which would not answer.
class join_watch
{
  public:
    explicit join_watch(std::vector<std::unique_ptr<rt::redis_server>>& nodes)
        : nodes_(nodes), stopped_(nodes.size(), false), thread_([this] { poll(); })
    {
    }
    ~join_watch()
    {
        done_ = true;
        thread_.join();
    }
    join_watch(const join_watch&) = delete;
    join_watch& operator=(const join_watch&) = delete;

    void stop(std::size_t i, bool stop)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_or_resume(*nodes_[i], stop);
        stopped_[i] = stop;
    }

    // What was seen so far; call once the workers have ended.
    rf::join_moments joined() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return joined_;
    }
    std::size_t rounds() const { return rounds_; }
    std::vector<std::string> problems() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return problems_;
    }

  private:
    void poll()
    {
        while (!done_) {
            for (std::size_t i = 0; i < nodes_.size(); ++i)
                poll_node(i);
            ++rounds_;
            std::this_thread::sleep_for(fair_poll_pause);
        }
    }

    void poll_node(std::size_t i)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopped_[i])
            return;
        std::string states;
        try {
            states = rt::redis_command(nodes_[i]->port(), {"HGETALL", fair_states_key});
        } catch (const std::exception& e) {
            if (problems_.size() < 5)
                problems_.push_back(std::string("polling the queue: ") + e.what());
            return;
        }
        // After the reply: every commit it shows happened before this.
        const std::int64_t seen = monotonic_ns();
        std::istringstream in(states);
        for (std::string value, state; in >> value >> state;) {
            // Committed: 'c', or 'c' and the stamp that lets a release hand it the key.
            if (state.front() != 'c' || joined_.count(value) != 0)
                continue;
            auto& on = committed_on_[value];
            on.insert(i);
            if (on.size() == quorum)
                joined_.emplace(value, seen);
        }
    }

    std::vector<std::unique_ptr<rt::redis_server>>& nodes_;
    mutable std::mutex mutex_;
    std::vector<bool> stopped_;
    std::map<std::string, std::set<std::size_t>> committed_on_;
    rf::join_moments joined_;
    std::vector<std::string> problems_;
    std::atomic<bool> done_{false};
    std::atomic<std::size_t> rounds_{0};
    std::thread thread_;  // last: it starts once the rest is made
};

void fair_scenario(const std::string& name, bool stop_nodes)
{
    log_dir dir;
    auto nodes = start_servers(5);
    waiter_processes ran;
    rf::join_moments joined;
    std::size_t rounds = 0;
    {
        join_watch watch(nodes);
        ran = run_waiter_processes(
            dir, join_urls(nodes), sharing_processes, fair_expiry, sharing_run(), {"--fair", "1"},
            [&](steady::time_point until) {
                if (stop_nodes)
                    stop_one_node_after_another(
                        nodes.size(), [&](std::size_t i, bool stop) { watch.stop(i, stop); },
                        until);
            });
        joined = watch.joined();
        rounds = watch.rounds();
        for (auto& p : watch.problems())
            ran.problems.push_back(p);
    }
    const rf::expectation expect{.safe = true};
    const rf::tally t = rf::count(ran.sections, ran.failures, {});
    auto violated = rf::violations(t, expect);
    const auto shares = rf::sections_per_process(ran.sections, sharing_processes);
    require_every_process_served(shares, violated);
    const auto order = rf::count_overtakings(ran.sections, joined, fair_clock_margin_ns);
    const auto node_deadline = std::chrono::duration_cast<std::chrono::nanoseconds>(
        fair_expiry * 5 / 100);  // options::timeout_factor, 0.05
    const std::int64_t bound = rf::fair_wait_bound_ns(
        {.refresh_ns = std::chrono::nanoseconds(fair_expiry / 4).count(),
         .entry_ttl_ns = std::chrono::nanoseconds(3 * (fair_expiry / 4)).count(),
         .retry_delay_max_ns = std::chrono::nanoseconds(250ms).count(),
         .node_deadline_ns = node_deadline.count(),
         .hold_ns = std::chrono::nanoseconds(sharing_hold).count(),
         .ahead = static_cast<std::size_t>(sharing_processes * waiters_per_process - 1)});
    const std::int64_t longest = rf::longest_wait_ns(ran.sections);
    if (order.overtakings > 0)
        violated.push_back(std::to_string(order.overtakings) + " overtaking(s) of " +
                           std::to_string(order.ordered_pairs) + " pairs ordered by their joins");
    if (order.ordered_pairs == 0)
        violated.push_back("no pair of acquisitions was ordered by its joins: nothing was checked");
    if (ran.failures > 0)
        violated.push_back(std::to_string(ran.failures) + " acquire(s) failed");
    if (longest >= bound)
        violated.push_back("a waiter waited " + std::to_string(longest / 1'000'000) +
                           " ms, not below the bound of " + std::to_string(bound / 1'000'000) +
                           " ms");
    const bool passed = ran.problems.empty() && violated.empty();
    print_row(rf::table_row(name, expect, t, passed));
    std::cout << "  " << sharing_processes << " processes x " << waiters_per_process << " waiters"
              << (stop_nodes ? ", one node stopped after another" : "") << ": grants per process "
              << slashed(shares) << "; " << joined.size() << " joins seen in " << rounds
              << " polls, " << order.ordered_pairs << " pairs ordered by their joins, "
              << order.overtakings << " overtakings; longest wait " << longest / 1'000'000
              << " ms (bound " << bound / 1'000'000 << " ms)\n"
              << std::flush;
    report_problems(name, dir, passed, ran.problems, violated);
}

// ---- the election ----
//
// Five nodes and four worker processes in mode elect, each a candidate that leads for 2 s
// (past its 1 s expiry, by the watchdog), resigns and campaigns again, and an observer that
// logs every leader it sees. While one node after another is stopped for 400 ms (the first
// 5.4 s), the driver SIGKILLs the current leader's process three times, 100 to 400 ms after
// its grant, and starts a fresh candidate in its place. Then it waits for the next grant and
// checks the observers one expiry after it.
//
// Asserted: never two leaders at once, by the safe bound the library promises (a grant that
// began before the previous leader's validity ended, unless that leader had begun to resign:
// checker.hpp); terms strictly grow from grant to grant; no observer names a leader (value
// and term) that no candidate was granted; after each kill a new leader is granted within
// the successor bound below; each killed process had not begun to resign (it was the
// leader); and one expiry after the last grant, every live observer's last view is that
// leader (value and term) and came within that expiry.
constexpr int election_candidates = 4;
constexpr int election_kills = 3;
constexpr ms election_expiry = 1000ms;
constexpr ms election_hold = 2000ms;
constexpr ms election_kill_delay_min = 100ms;  // after the grant: well within the 2 s hold
constexpr ms election_kill_delay_max = 400ms;
// From a kill to the next grant: the killed leader's last extension reached the running nodes
// before the kill, so its key lapses there within one expiry of the kill (a stopped node may
// keep it longer, but it is one of five). The next candidate in the queue is not told of the
// lapse: an attempt it began just before fails, and a failed attempt waits for every node or
// its per-node deadline (expiry x 0.05: with a node stopped it waits that long), then its
// clean-up round (at most a deadline too); then it pauses for its refresh period (expiry / 4)
// and attempts again, and that attempt, its token's write-back and its publication each take
// at most a per-node deadline: 1000 + 250 + 5 x 50 = 1500 ms. The kill's moment is taken
// before the signal is sent.
constexpr ms election_refresh = election_expiry / 4;
constexpr ms election_node_deadline = election_expiry * 5 / 100;
constexpr ms successor_bound = election_expiry + election_refresh + 5 * election_node_deadline;
// The observers are checked once they all saw the last grant's leader, or this long after
// its grant; it must lead until then (its hold is 2 s).
constexpr ms observer_check_limit = election_expiry + 500ms;
constexpr ms election_grant_limit = 10s;  // waiting for a grant at all (a schedule failure)

// The candidates of the election scenario: worker processes in mode elect, by id, and what
// they logged.
class candidates
{
  public:
    candidates(log_dir& dir, std::string nodes) : dir_(dir), nodes_(std::move(nodes)) {}

    // Starts candidate `id` (a fresh process) and waits until it is ready.
    void start(int id)
    {
        const std::string log = dir_.path + "/worker-" + std::to_string(id) + ".log";
        readers_.emplace(id, log);
        workers_.emplace(
            id, std::make_unique<worker_process>(
                    id,
                    std::vector<std::string>{
                        REDLOCK_FAULT_WORKER, "--id", std::to_string(id), "--mode", "elect",
                        "--nodes", nodes_, "--keys", "lock:leader", "--expiry-ms",
                        std::to_string(election_expiry.count()), "--work-ms",
                        std::to_string(election_hold.count()), "--duration-ms", "60000"},
                    log));
        // Not wait_line: it would drop what the worker logs right after its ready line.
        if (!poll_until([&] { return ready_.count(id) != 0 || !alive(id); },
                        steady::now() + ready_timeout) ||
            !alive(id))
            throw std::runtime_error("worker " + std::to_string(id) + " did not start (" +
                                     workers_.at(id)->describe_status() + ")");
    }

    // SIGKILL: it dies at once, in whatever it was doing.
    void kill(int id) { workers_.at(id)->kill(); }

    bool alive(int id) { return !workers_.at(id)->wait_exit(steady::now()); }  // never blocks

    // The ids of the candidates still running.
    std::vector<int> alive()
    {
        std::vector<int> out;
        for (auto& [id, w] : workers_)
            if (alive(id))
                out.push_back(id);
        return out;
    }

    // Reads what they logged since the last call.
    void poll()
    {
        for (auto& [id, reader] : readers_)
            for (const auto& text : reader.new_lines()) {
                auto line = rf::parse_line(text);
                if (!line)
                    continue;
                if (!rf::read_election_line(*line, id, log_))
                    problems_.push_back("worker " + std::to_string(id) + " (bad): " + text);
                else if (line->kind == "ready")
                    ready_.insert(id);
                else if (line->kind == "campaign_failed")
                    ++campaign_failures_;
                else if (line->kind == "lost")
                    ++lost_;
                else if (line->kind == "fatal" || line->kind == "observe_failed" ||
                         line->kind == "wait_lost_failed")
                    problems_.push_back("worker " + std::to_string(id) + ": " + text);
            }
    }

    // Polls until `done` holds or `limit` passes; whether it held.
    bool poll_until(const std::function<bool()>& done, steady::time_point limit)
    {
        for (;;) {
            poll();
            if (done())
                return true;
            if (steady::now() >= limit)
                return false;
            std::this_thread::sleep_for(poll_interval);
        }
    }

    // Ends every candidate still running (SIGTERM: it resigns if it leads) and reads the rest.
    void end()
    {
        for (auto& [id, w] : workers_)
            w->signal(SIGTERM);
        const auto deadline = steady::now() + exit_grace;
        for (auto& [id, w] : workers_) {
            if (!w->wait_exit(deadline))
                problems_.push_back("worker " + std::to_string(id) + " did not exit in time");
            else if (!w->exited_ok() && killed_.count(id) == 0)
                problems_.push_back("worker " + std::to_string(id) + ": " + w->describe_status());
        }
        poll();
    }

    void note_killed(int id) { killed_.insert(id); }
    const rf::election_log& log() const { return log_; }
    std::vector<std::string>& problems() { return problems_; }
    std::size_t campaign_failures() const { return campaign_failures_; }
    std::size_t lost() const { return lost_; }

  private:
    log_dir& dir_;
    std::string nodes_;
    std::map<int, rf::log_reader> readers_;
    std::map<int, std::unique_ptr<worker_process>> workers_;
    std::set<int> killed_;
    std::set<int> ready_;
    rf::election_log log_;
    std::vector<std::string> problems_;
    std::size_t campaign_failures_ = 0;
    std::size_t lost_ = 0;
};

// The latest leadership that began after `after_ns`, or nullptr.
const rf::leadership* latest_after(const rf::election_log& log, std::int64_t after_ns)
{
    const rf::leadership* latest = nullptr;
    for (const auto& l : log.leaderships)
        if (l.start_ns > after_ns && (!latest || l.start_ns > latest->start_ns))
            latest = &l;
    return latest;
}

void election_with_leaders_killed()
{
    const std::string name = "election-leaders-killed-nodes-stopped";
    log_dir dir;
    auto nodes = start_servers(5);
    candidates c(dir, join_urls(nodes));
    std::vector<std::string> violated;
    struct kill_record
    {
        int worker;
        std::uint64_t term;
        std::int64_t at_ns;
    };
    std::vector<kill_record> kills;
    std::optional<rf::leadership> last;  // the leader the observers are checked against
    long max_lag_ms = 0;
    const auto started = steady::now();
    try {
        int next_id = 0;
        for (; next_id < election_candidates; ++next_id)
            c.start(next_id);
        // One node after another stopped while the leaders are killed: each kill then meets
        // one node stopped or just resumed.
        const auto stops_until =
            steady::now() + election_kills * (successor_bound + election_kill_delay_max);
        std::thread stopper([&] {
            stop_one_node_after_another(
                nodes.size(), [&](std::size_t i, bool stop) { stop_or_resume(*nodes[i], stop); },
                stops_until);
        });
        std::mt19937 rng(base_seed());
        std::uniform_int_distribution<long> delay_ms(election_kill_delay_min.count(),
                                                     election_kill_delay_max.count());
        std::int64_t since = 0;
        try {
            for (int k = 0; k < election_kills; ++k) {
                const rf::leadership* leader = nullptr;
                if (!c.poll_until(
                        [&] { return (leader = latest_after(c.log(), since)) != nullptr; },
                        steady::now() + election_grant_limit))
                    throw std::runtime_error("nobody was granted leadership within " +
                                             std::to_string(election_grant_limit.count()) + " ms");
                const rf::leadership victim = *leader;
                sleep_until(from_monotonic(victim.start_ns) + ms(delay_ms(rng)));
                const std::int64_t at = monotonic_ns();
                c.kill(victim.worker);
                c.note_killed(victim.worker);
                kills.push_back({victim.worker, victim.term, at});
                since = at;
                c.start(next_id++);
            }
        } catch (...) {
            stopper.join();
            throw;
        }
        stopper.join();
        // Every node runs again: the leader granted next is the one the observers must name.
        const std::int64_t resumed = monotonic_ns();
        const rf::leadership* leader = nullptr;
        if (!c.poll_until([&] { return (leader = latest_after(c.log(), resumed)) != nullptr; },
                          steady::now() + election_grant_limit))
            throw std::runtime_error("nobody was granted leadership after the nodes resumed");
        last = *leader;
        const auto observers = c.alive();
        c.poll_until(
            [&] {
                for (int id : observers)
                    if (!rf::view_lag_ns(c.log().views, id, *last, monotonic_ns()))
                        return false;
                return true;
            },
            from_monotonic(last->start_ns) + observer_check_limit);
        const std::int64_t checked = monotonic_ns();
        for (const auto& l : c.log().leaderships)
            if (l.worker == last->worker && l.term == last->term && l.resigned_ns &&
                *l.resigned_ns <= checked)
                throw std::runtime_error(
                    "the last leader resigned before the observers were "
                    "checked: its hold is too short for the check");
        for (int id : observers) {
            const auto lag = rf::view_lag_ns(c.log().views, id, *last, checked);
            if (!lag)
                violated.push_back("observer " + std::to_string(id) +
                                   " did not name the current leader " + rf::describe(*last) + " " +
                                   std::to_string((checked - last->start_ns) / 1'000'000) +
                                   " ms after its grant");
            else if (*lag > std::chrono::nanoseconds(election_expiry).count())
                violated.push_back("observer " + std::to_string(id) + " saw the leader " +
                                   std::to_string(*lag / 1'000'000) +
                                   " ms after its grant, later than one expiry");
            else
                max_lag_ms = std::max(max_lag_ms, static_cast<long>(*lag / 1'000'000));
        }
    } catch (const std::exception& e) {
        c.problems().push_back(std::string("schedule: ") + e.what());
    }
    c.end();

    const auto& log = c.log();
    for (auto& v : rf::election_violations(log))
        violated.push_back(std::move(v));
    std::vector<long> successor_ms;
    for (const auto& k : kills) {
        for (const auto& l : log.leaderships)
            if (l.worker == k.worker && l.term == k.term && l.resigned_ns)
                violated.push_back("worker " + std::to_string(k.worker) +
                                   " had begun to resign when it was killed: it was not the "
                                   "leader (the schedule was late)");
        const rf::leadership* next = rf::first_leadership_after(log.leaderships, k.at_ns);
        if (!next) {
            violated.push_back("nobody led after worker " + std::to_string(k.worker) +
                               " was killed");
            continue;
        }
        successor_ms.push_back(static_cast<long>((next->start_ns - k.at_ns) / 1'000'000));
        if (successor_ms.back() > successor_bound.count())
            violated.push_back("the next leader after worker " + std::to_string(k.worker) +
                               " was killed came after " + std::to_string(successor_ms.back()) +
                               " ms, more than " + std::to_string(successor_bound.count()) + " ms");
    }
    if (kills.size() != static_cast<std::size_t>(election_kills))
        violated.push_back("only " + std::to_string(kills.size()) + " of " +
                           std::to_string(election_kills) + " kills were made");

    std::uint64_t first_term = 0, last_term = 0;
    for (const auto& l : log.leaderships) {
        first_term = first_term == 0 ? l.term : std::min(first_term, l.term);
        last_term = std::max(last_term, l.term);
    }
    std::vector<long> sorted = successor_ms;
    std::sort(sorted.begin(), sorted.end());
    rf::tally t;
    t.acquisitions = log.leaderships.size();
    t.acquire_failures = c.campaign_failures();
    t.overlaps = t.overlaps_in_validity = rf::find_leader_overlaps(log.leaderships).size();
    const bool passed = c.problems().empty() && violated.empty();
    print_row(rf::table_row(name, {.safe = true}, t, passed));
    std::cout << "  " << election_candidates << " candidates, " << kills.size()
              << " leaders killed (one node stopped after another): next leader after "
              << slashed(std::vector<std::size_t>(successor_ms.begin(), successor_ms.end()))
              << " ms (median " << (sorted.empty() ? -1 : sorted[sorted.size() / 2]) << ", bound "
              << successor_bound.count() << "); " << log.leaderships.size()
              << " leaderships, terms " << first_term << ".." << last_term << ", " << c.lost()
              << " lost; observers named the last "
              << "leader " << max_lag_ms << " ms after its grant at most (bound "
              << election_expiry.count() << "); "
              << std::chrono::duration_cast<ms>(steady::now() - started).count() << " ms\n"
              << std::flush;
    report_problems(name, dir, passed, c.problems(), violated);
}
}  // namespace

BOOST_AUTO_TEST_SUITE(faults)

BOOST_AUTO_TEST_CASE(baseline)
{
    run_scenario("baseline");
}
BOOST_AUTO_TEST_CASE(node_sigstop)
{
    run_scenario("node-sigstop");
}
BOOST_AUTO_TEST_CASE(restart_with_aof_always)
{
    run_scenario("restart-aof-always");
}
BOOST_AUTO_TEST_CASE(restart_delayed_past_the_ttl)
{
    run_scenario("restart-delayed");
}
BOOST_AUTO_TEST_CASE(restart_at_once_without_persistence)
{
    run_scenario("restart-at-once");
}
BOOST_AUTO_TEST_CASE(client_stopped_past_its_ttl)
{
    run_scenario("client-stop-past-ttl");
}
BOOST_AUTO_TEST_CASE(client_pause_command)
{
    run_scenario("client-pause-cmd");
}
BOOST_AUTO_TEST_CASE(client_kill_command)
{
    run_scenario("client-kill");
}
BOOST_AUTO_TEST_CASE(one_node_stopped_for_a_while)
{
    run_scenario("node-stopped-a-while");
}
BOOST_AUTO_TEST_CASE(failed_acquire_on_a_stalled_majority_leaves_no_key)
{
    stalled_majority_leaves_no_key();
}
BOOST_AUTO_TEST_CASE(processes_with_several_waiters_share_a_key)
{
    processes_share_one_key();
}
BOOST_AUTO_TEST_CASE(semaphore_permits_with_nodes_stopped_one_after_another)
{
    semaphore_with_nodes_stopped();
}
BOOST_AUTO_TEST_CASE(rw_mutex_with_nodes_stopped_one_after_another)
{
    rw_mutex_with_nodes_stopped();
}
BOOST_AUTO_TEST_CASE(fair_grants_in_the_order_waiters_joined)
{
    fair_scenario("fair-order", false);
}
BOOST_AUTO_TEST_CASE(fair_with_nodes_stopped_one_after_another)
{
    fair_scenario("fair-node-stopped", true);
}
BOOST_AUTO_TEST_CASE(election_with_leaders_killed_and_nodes_stopped)
{
    election_with_leaders_killed();
}
BOOST_AUTO_TEST_CASE(one_fast_clock_of_five)
{
    run_scenario("fast-clock-1-of-5");
}
BOOST_AUTO_TEST_CASE(one_fast_clock_in_a_bare_quorum)
{
    run_scenario("fast-clock-1-bare-quorum");
}
BOOST_AUTO_TEST_CASE(three_fast_clocks_of_five)
{
    run_scenario("fast-clock-3-of-5");
}
BOOST_AUTO_TEST_CASE(sentinel_failover_without_replica_acknowledgement)
{
    run_scenario("sentinel-failover-wait-0");
}
BOOST_AUTO_TEST_CASE(sentinel_failover_with_one_replica_acknowledging)
{
    run_scenario("sentinel-failover-wait-1");
}
BOOST_AUTO_TEST_CASE(cluster_slot_migrated_while_locks_are_held)
{
    run_scenario("cluster-slot-migration");
}
BOOST_AUTO_TEST_CASE(cluster_master_killed_and_its_replica_promoted)
{
    run_scenario("cluster-master-failover");
}

BOOST_AUTO_TEST_SUITE_END()
