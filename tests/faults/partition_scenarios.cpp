// SPDX-License-Identifier: BSL-1.0
// The partition scenarios of the fault suite (test suite `partitions` of fault_tests; select
// one with `fault_tests --run_test=partitions/NAME`, all with `--run_test=partitions`).
//
// Every redis-server and every worker process runs in a network namespace of its own, joined
// by a bridge (netns.hpp); a partition drops packets silently with nftables on the bridge.
// Five servers, four worker processes of three waiters each (worker.cpp's mode
// waiters) on one lock: a mutex, a fair mutex, a semaphore of 2 permits (4 of 5 nodes per
// permit) or a read-write lock read 70% of the time. Expiry 1 s, holds of 2 ms.
//
// Each scenario lets every process lock once, measures the rate with every link up for 1 s,
// applies its fault for 3 s, heals it, and watches for one expiry more:
//
//   minority-split   the quorum's nodes and processes 2, 3 on one side; the other nodes and
//                    processes 0, 1 on the other
//   bridge           processes 0, 1 reach nodes [0, Q), processes 2, 3 nodes [N - Q, N): two
//                    majorities that share 2Q - N nodes (1 for a mutex)
//   flapping         a random split of nodes and processes every 200 to 500 ms (in the soak
//                    profile a random mix of these splits, minority splits, bridges and
//                    one-way faults)
//   one-way          nodes [0, Q) receive processes 0 and 1's requests, but their replies
//                    (and TCP acknowledgements) to them are dropped
//   holder-cut       process 0, holding the lock (it holds 400 ms), cut off from every node
//
// Asserted in each: no overlap within validity (a writer or a mutex holder alone, at most 2
// permit holders); the processes on the side with a quorum (all but the cut-off ones) lock at
// at least half their all-up rate during the fault once it has lasted 1.5 s (before, they may
// wait for what the cut-off ones hold to expire), and the others not at all (the fault was in
// effect); some process locks within one expiry after the heal (when each process did is
// printed); after the one-way fault, one expiry after the processes exited, no key is left on
// any node; in holder-cut, the others lock within one expiry and one retry pause (250 ms) of
// the cut. The soak profile (--soak) runs the cycle of up, fault and heal ten times.
//
// Five more partition an election (the section "the elections" below has the details): four
// processes in mode elect (a candidate and an observer each); once every observer names the
// first leader, a fault for 3 s, with the leader's process in process 0's place:
//
//   election-leader-cut-off   the leader's process with nodes 0 and 1, the others with 2 to 4
//   election-holder-cut       the leader's process cut off from every node
//   election-one-way          one-way, the leader's process one of the two
//   election-bridge           bridge, the leader's process one of the two on nodes 0 to 2
//   election-flapping         flapping
//
// Asserted in each: never two leaders within their validity, terms that grow, views only of
// granted leaders; a leader within 1500 ms of the heal and every observer naming the leader
// of the moment within 850 ms of the heal or its grant. Where the leader lost its quorum: its
// guard reports the loss during the fault and another process's candidate leads within
// 1500 ms of the cut. In the bridge (leaders resign after 250 ms there and in flapping):
// leaders are granted from 1.5 s into the fault on. In one-way: the leader reports the loss
// during the fault, and one expiry after the processes exited no key of the election but its
// fencing counter is left on any node.
//
// Where namespaces cannot be made (not root, no nft), every scenario is skipped with a
// message saying why.

#include <boost/test/unit_test.hpp>

#include "checker.hpp"
#include "netns.hpp"
#include "process_io.hpp"
#include "run_profile.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
namespace rf = redlock::faults;
using rf::soak_requested;
namespace ns = redlock::faults::netns;

constexpr std::size_t server_count = 5;
constexpr std::size_t process_count = 4;
constexpr int waiters_per_process = 3;
constexpr ms expiry = 1000ms;
constexpr ms hold = 2ms;
constexpr ms holder_hold = 400ms;      // process 0 in holder-cut: long enough to be cut
constexpr ms retry_pause_max = 250ms;  // options::retry_delay's maximum
// config::connect_timeout of the workers. A connect begun while the network is cut gets no
// answer to its SYN (the kernel repeats a SYN only after 1 s) and fails only at this timeout;
// the default (1 s) would let reconnecting after a heal take up to one expiry by itself. On
// this private bridge a connect takes well under a millisecond.
constexpr ms connect_timeout = 250ms;
constexpr ms all_up_window = 1000ms;  // the rate with every link up
constexpr ms fault_window = 3000ms;   // how long a fault lasts (flapping too)
// The rate with a fault is measured once this has passed since it began: until then the quorum
// side may wait for what the cut-off processes hold on its nodes to expire (a lock: one
// expiry; a fair queue entry: three refresh periods, then a refresh period until the next
// head attempts), by design.
constexpr ms fault_settle = 1500ms;
constexpr ms flapping_window = 3000ms;
constexpr ms resume_watch_extra = 500ms;  // past one expiry, to see every process lock again
constexpr ms warm_limit = 15s;            // every process has locked once
constexpr ms exit_grace = 30s;
constexpr ms poll_interval = 2ms;
constexpr ms node_record_interval = 250ms;  // the nodes' keys recorded during a fault
constexpr ms key_check_margin = 100ms;      // past one expiry, for the nodes' clocks
constexpr double least_rate_share = 0.5;
constexpr std::int64_t in_flight_ns = 50'000'000;  // the per-node deadline: 0.05 x expiry
const std::string lock_key = "lock:p";

unsigned seed_for(std::string_view name)
{
    if (const char* v = std::getenv("REDLOCK_FAULTS_SEED"); v && *v)
        return static_cast<unsigned>(std::strtoul(v, nullptr, 10)) +
               static_cast<unsigned>(std::hash<std::string_view>{}(name));
    return std::random_device{}();
}

std::int64_t monotonic_ns()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t ms_to_ns(ms d)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

long to_ms(std::int64_t ns)
{
    return static_cast<long>(ns / 1'000'000);
}

// ---- the locks ----

enum class lock_kind { mutex, fair, semaphore, rw };

struct kind_info
{
    std::string name;
    std::vector<std::string> args;  // the worker's arguments for it
    std::size_t quorum;             // nodes a holder needs
    std::size_t most_holders;       // at once within validity
};

constexpr int semaphore_permits = 2;

kind_info info(lock_kind k)
{
    switch (k) {
        case lock_kind::mutex:
            return {"mutex", {}, server_count / 2 + 1, 1};
        case lock_kind::fair:
            return {"fair", {"--fair", "1"}, server_count / 2 + 1, 1};
        case lock_kind::semaphore:
            // floor(N * L / (L + 1)) + 1 (docs/safety.md)
            return {"semaphore",
                    {"--permits", std::to_string(semaphore_permits)},
                    server_count * semaphore_permits / (semaphore_permits + 1) + 1,
                    static_cast<std::size_t>(semaphore_permits)};
        case lock_kind::rw:
            return {"rw", {"--shared-percent", "70"}, server_count / 2 + 1, 1};
    }
    throw std::logic_error("lock kind");
}

// ---- the network ----

// What passes between server s and process p.
enum class link { up, cut, replies_lost };
using link_matrix = std::vector<std::vector<link>>;  // [server][process]

link_matrix all_up()
{
    return link_matrix(server_count, std::vector<link>(process_count, link::up));
}

// Two sides: a server and a process on different sides cannot reach each other.
link_matrix split(const std::vector<int>& server_side, const std::vector<int>& process_side)
{
    auto m = all_up();
    for (std::size_t s = 0; s < server_count; ++s)
        for (std::size_t p = 0; p < process_count; ++p)
            if (server_side[s] != process_side[p])
                m[s][p] = link::cut;
    return m;
}

// ---- one run: the lab, the servers, the workers ----

struct hold_line
{
    int process = 0;
    std::string owner;
    std::int64_t start_ns = 0;
    std::int64_t until_ns = 0;
};

class partition_run
{
  public:
    // `mode_args(p)`: process p's arguments for its mode (worker.cpp), besides those every
    // process gets (its id, the nodes, the key, the expiry, the duration, the connect timeout).
    partition_run(const std::function<std::vector<std::string>(std::size_t)>& mode_args,
                  ms duration)
    {
        for (std::size_t s = 0; s < server_count; ++s)
            servers_.push_back(std::make_unique<ns::server>(
                lab_, lab_.add_host("s" + std::to_string(s), 11 + static_cast<int>(s)), dir_.path));
        std::string urls;
        for (const auto& s : servers_)
            urls += (urls.empty() ? "" : ",") + s->url();
        for (std::size_t p = 0; p < process_count; ++p)
            process_hosts_.push_back(
                lab_.add_host("w" + std::to_string(p), 31 + static_cast<int>(p)));
        for (std::size_t p = 0; p < process_count; ++p) {
            const std::string log = dir_.path + "/worker-" + std::to_string(p) + ".log";
            readers_.emplace_back(log);
            std::vector<std::string> args = {REDLOCK_FAULT_WORKER,
                                             "--id",
                                             std::to_string(p),
                                             "--nodes",
                                             urls,
                                             "--keys",
                                             lock_key,
                                             "--expiry-ms",
                                             std::to_string(expiry.count()),
                                             "--duration-ms",
                                             std::to_string(duration.count()),
                                             "--connect-timeout-ms",
                                             std::to_string(connect_timeout.count())};
            const auto more = mode_args(p);
            args.insert(args.end(), more.begin(), more.end());
            workers_.push_back(
                std::make_unique<ns::child>(ns::lab::exec_in(process_hosts_[p], args), log));
        }
    }

    const std::string& dir() const { return dir_.path; }
    void keep_logs() { dir_.keep = true; }
    const std::vector<rf::section>& sections() const { return sections_; }
    const rf::election_log& election() const { return election_; }
    std::size_t failures() const { return failures_; }
    std::vector<std::string>& problems() { return problems_; }
    // When end_workers sent its first signal (the largest value before).
    std::int64_t end_began_ns() const { return end_began_ns_; }
    const std::vector<std::unique_ptr<ns::server>>& servers() const { return servers_; }

    // Reads the workers' logs.
    void poll()
    {
        for (std::size_t p = 0; p < readers_.size(); ++p)
            for (const auto& text : readers_[p].new_lines()) {
                auto line = rf::parse_line(text);
                if (!line)
                    continue;
                if (!rf::read_election_line(*line, static_cast<int>(p), election_))
                    problems_.push_back("worker " + std::to_string(p) + " (bad): " + text);
                if (line->kind == "section") {
                    if (auto s = rf::parse_section(*line, static_cast<int>(p)))
                        sections_.push_back(std::move(*s));
                    else
                        problems_.push_back("worker " + std::to_string(p) + " (bad): " + text);
                } else if (line->kind == "hold") {
                    holds_.push_back({static_cast<int>(p),
                                      std::string(line->get("owner").value_or("")),
                                      std::stoll(std::string(line->get("start").value_or("0"))),
                                      std::stoll(std::string(line->get("until").value_or("0")))});
                } else if (line->kind == "acquire_failed" || line->kind == "campaign_failed") {
                    ++failures_;
                } else if (line->kind == "fatal" || line->kind == "observe_failed" ||
                           line->kind == "wait_lost_failed") {
                    problems_.push_back("worker " + std::to_string(p) + ": " + text);
                }
            }
    }

    // Polls the logs until `done` holds; throws naming `what` after `limit` or when a worker
    // ended early.
    void wait_for(const std::function<bool()>& done, ms limit, const std::string& what)
    {
        const auto deadline = steady::now() + limit;
        for (;;) {
            poll();
            if (done())
                return;
            for (std::size_t p = 0; p < workers_.size(); ++p)
                if (workers_[p]->wait_exit(steady::now()))
                    throw std::runtime_error("worker " + std::to_string(p) + " ended (" +
                                             workers_[p]->describe_status() +
                                             ") while waiting for " + what);
            if (steady::now() >= deadline)
                throw std::runtime_error("timed out after " + std::to_string(limit.count()) +
                                         " ms waiting for " + what);
            std::this_thread::sleep_for(poll_interval);
        }
    }

    // Polls the logs for a while (a measurement window, not a wait for an event).
    void watch(ms d)
    {
        const auto until = steady::now() + d;
        while (steady::now() < until) {
            poll();
            std::this_thread::sleep_for(
                std::min<steady::duration>(poll_interval * 5, until - steady::now()));
        }
        poll();
    }

    // The first section of process p that began after `after_ns`, or nullopt.
    std::optional<std::int64_t> first_section_after(std::size_t p, std::int64_t after_ns) const
    {
        std::optional<std::int64_t> first;
        for (const auto& s : sections_)
            if (s.worker == static_cast<int>(p) && s.start_ns > after_ns &&
                (!first || s.start_ns < *first))
                first = s.start_ns;
        return first;
    }

    // Sections of the given processes that began in [from, to).
    std::size_t sections_between(const std::vector<std::size_t>& processes, std::int64_t from,
                                 std::int64_t to) const
    {
        std::size_t n = 0;
        for (const auto& s : sections_)
            if (s.start_ns >= from && s.start_ns < to &&
                std::find(processes.begin(), processes.end(), static_cast<std::size_t>(s.worker)) !=
                    processes.end())
                ++n;
        return n;
    }

    // Applies the links, all at once; returns the moment they were in effect.
    std::int64_t apply(const link_matrix& m)
    {
        ns::drops d;
        for (std::size_t s = 0; s < server_count; ++s)
            for (std::size_t p = 0; p < process_count; ++p) {
                const std::string& server = servers_[s]->where().address;
                const std::string& process = process_hosts_[p].address;
                if (m[s][p] == link::cut)
                    d.emplace(process, server);
                if (m[s][p] != link::up)
                    d.emplace(server, process);
            }
        lab_.set_drops(d);
        return monotonic_ns();
    }

    // Waits for process 0's next hold that begins after now; returns it.
    hold_line next_hold(ms limit)
    {
        const std::size_t seen = holds_.size();
        wait_for([&] { return holds_.size() > seen; }, limit, "process 0 to hold the lock");
        return holds_.back();
    }

    // Ends the run: every worker finishes its acquire and exits (SIGTERM); returns the moment
    // the last one had exited.
    std::int64_t end_workers()
    {
        end_began_ns_ = monotonic_ns();
        for (auto& w : workers_)
            w->signal(SIGTERM);
        const auto deadline = steady::now() + exit_grace;
        for (std::size_t p = 0; p < workers_.size(); ++p) {
            if (!workers_[p]->wait_exit(deadline))
                problems_.push_back("worker " + std::to_string(p) + " did not exit within " +
                                    std::to_string(exit_grace.count()) + " ms of SIGTERM");
            else if (!workers_[p]->exited_ok())
                problems_.push_back("worker " + std::to_string(p) + ": " +
                                    workers_[p]->describe_status());
        }
        const std::int64_t t = monotonic_ns();
        poll();
        return t;
    }

    // Every key on every server but the fencing counters (which have no expiry), as
    // "sN:key (PTTL ms)".
    std::vector<std::string> keys_left() const
    {
        std::vector<std::string> out;
        for (std::size_t s = 0; s < servers_.size(); ++s) {
            std::istringstream keys(servers_[s]->command({"KEYS", "*"}));
            for (std::string k; keys >> k;)
                if (k.find("redlock:fence:") == std::string::npos)
                    out.push_back("s" + std::to_string(s) + ":" + k + " (PTTL " +
                                  servers_[s]->command({"PTTL", k}) + " ms)");
        }
        return out;
    }

    // What every server holds: per server its clock (TIME), then each key with its type, its
    // PTTL and its content. Appended to the run's nodes.txt during a fault, so that the logs
    // kept when a check fails show what the nodes' locks and queues looked like meanwhile.
    void record_nodes(const std::string& label) const
    {
        std::ofstream out(dir_.path + "/nodes.txt", std::ios::app);
        out << "== " << label << "\n";
        for (std::size_t s = 0; s < servers_.size(); ++s) {
            const auto& server = *servers_[s];
            out << "s" << s << " time " << server.command({"TIME"}) << "\n";
            std::istringstream keys(server.command({"KEYS", "*"}));
            for (std::string k; keys >> k;) {
                const std::string type = server.command({"TYPE", k});
                std::vector<std::string> read = {"GET", k};
                if (type == "zset")
                    read = {"ZRANGE", k, "0", "-1", "WITHSCORES"};
                else if (type == "hash")
                    read = {"HGETALL", k};
                out << "s" << s << " " << k << " " << type << " pttl "
                    << server.command({"PTTL", k}) << ": " << server.command(read) << "\n";
            }
        }
    }

  private:
    // Declared in this order so that they go in the reverse one: the workers, the servers,
    // then the namespaces, then the logs.
    rf::log_dir dir_{"redlock-partitions"};
    ns::lab lab_;
    std::vector<std::unique_ptr<ns::server>> servers_;
    std::vector<ns::host> process_hosts_;
    std::vector<std::unique_ptr<ns::child>> workers_;
    std::vector<rf::log_reader> readers_;
    std::vector<rf::section> sections_;
    rf::election_log election_;  // mode elect
    std::vector<hold_line> holds_;
    std::size_t failures_ = 0;
    std::vector<std::string> problems_;
    std::int64_t end_began_ns_ = std::numeric_limits<std::int64_t>::max();
};

// ---- the scenarios ----

enum class fault { minority_split, bridge, flapping, one_way, holder_cut };

std::string_view name_of(fault f)
{
    switch (f) {
        case fault::minority_split:
            return "minority-split";
        case fault::bridge:
            return "bridge";
        case fault::flapping:
            return "flapping";
        case fault::one_way:
            return "one-way";
        case fault::holder_cut:
            return "holder-cut";
    }
    return "?";
}

// One fault applied and healed, and what it showed.
struct cycle
{
    fault shape = fault::minority_split;
    std::vector<std::size_t> quorum_side;  // processes that keep a quorum of nodes (rate check)
    double rate_all_up = 0;                // their sections per second, every link up
    double rate_fault = 0;                 // and while the fault lasted
    double rate_settled = 0;               // and once it had lasted fault_settle
    std::size_t cut_off_sections = 0;      // sections of the others during the fault
    long any_resumed_ms = -1;              // heal to the first section after it
    std::vector<long> resumed_ms = std::vector<long>(process_count, -1);  // per process
    long rival_ms = -1;         // holder-cut: cut to a rival's first section
    long holder_valid_ms = -1;  // holder-cut: cut to the holder's validity end
};

// The links of a fault shape; `holder` is the process cut off in holder-cut. Fills the
// processes that keep a quorum.
link_matrix links_of(fault f, const kind_info& kind, std::mt19937& rng,
                     std::vector<std::size_t>& quorum_side)
{
    const std::size_t q = kind.quorum;
    switch (f) {
        case fault::minority_split: {
            std::vector<int> servers(server_count, 1), processes = {1, 1, 0, 0};
            for (std::size_t s = 0; s < q; ++s)
                servers[s] = 0;
            quorum_side = {2, 3};
            return split(servers, processes);
        }
        case fault::bridge: {
            auto m = all_up();
            for (std::size_t s = 0; s < server_count; ++s)
                for (std::size_t p = 0; p < process_count; ++p) {
                    const bool reach = p < 2 ? s < q : s >= server_count - q;
                    m[s][p] = reach ? link::up : link::cut;
                }
            quorum_side = {0, 1, 2, 3};
            return m;
        }
        case fault::one_way: {
            auto m = all_up();
            for (std::size_t s = 0; s < q; ++s)
                m[s][0] = m[s][1] = link::replies_lost;
            quorum_side = {2, 3};
            return m;
        }
        case fault::holder_cut: {
            auto m = all_up();
            for (std::size_t s = 0; s < server_count; ++s)
                m[s][0] = link::cut;
            quorum_side = {1, 2, 3};
            return m;
        }
        case fault::flapping: {
            std::bernoulli_distribution coin(0.5);
            std::vector<int> servers(server_count), processes(process_count);
            for (auto& s : servers)
                s = coin(rng);
            for (auto& p : processes)
                p = coin(rng);
            quorum_side.clear();
            return split(servers, processes);
        }
    }
    throw std::logic_error("fault");
}

double per_second(std::size_t n, std::int64_t from, std::int64_t to)
{
    return to > from ? static_cast<double>(n) * 1e9 / static_cast<double>(to - from) : 0.0;
}

std::string figures(double v)
{
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(0);
    s << v;
    return s.str();
}

// Changes the links to a random split (in the soak profile a random shape) every 200 to
// 500 ms for `window`, leaving the last one in effect; returns the moment the first was.
std::int64_t flap(partition_run& r, const kind_info& kind, std::mt19937& rng, ms window, bool soak)
{
    const std::int64_t from = monotonic_ns();
    const auto until = steady::now() + window;
    std::uniform_int_distribution<int> pause_ms(200, 500);
    std::uniform_int_distribution<int> shape(0, 3);
    while (steady::now() < until) {
        std::vector<std::size_t> unused;
        // The soak profile mixes every shape in; the CI one only random splits.
        fault next = fault::flapping;
        if (soak) {
            const fault shapes[] = {fault::flapping, fault::minority_split, fault::bridge,
                                    fault::one_way};
            next = shapes[shape(rng)];
        }
        r.apply(links_of(next, kind, rng, unused));
        r.watch(
            std::min<ms>(ms(pause_ms(rng)), std::chrono::duration_cast<ms>(until - steady::now())));
    }
    return from;
}

// Watches a fault of a fixed shape for `window`, recording the nodes' keys every 250 ms
// (record_nodes) under `label`.
void watch_fault(partition_run& r, const std::string& label, ms window)
{
    for (ms watched{0}; watched < window; watched += node_record_interval) {
        r.watch(std::min(node_record_interval, window - watched));
        r.record_nodes(label + " +" + std::to_string((watched + node_record_interval).count()) +
                       " ms");
    }
}

// Applies fault `f` (the flapping one for `window`), heals it, and watches one expiry more;
// the checks of the cycle go to `violated`.
cycle run_cycle(partition_run& r, fault f, const kind_info& kind, std::mt19937& rng, ms window,
                bool soak, std::vector<std::string>& violated)
{
    cycle c;
    c.shape = f;
    const std::int64_t up_from = monotonic_ns();
    r.watch(all_up_window);
    const std::int64_t up_to = monotonic_ns();

    std::int64_t fault_from = 0;
    std::int64_t cut_ns = 0;
    std::optional<hold_line> held;
    if (f == fault::flapping) {
        fault_from = flap(r, kind, rng, window, soak);
    } else {
        auto links = links_of(f, kind, rng, c.quorum_side);
        if (f == fault::holder_cut) {
            // Cut process 0 off while it holds: at its next hold, 400 ms long.
            held = r.next_hold(warm_limit);
        }
        fault_from = r.apply(links);
        cut_ns = fault_from;
        watch_fault(r, std::string(name_of(f)), window);
    }
    const std::int64_t fault_to = monotonic_ns();
    const std::int64_t healed = r.apply(all_up());

    // Locking resumes within one expiry of the heal: some process locks by then. When every
    // process has locked again is printed, not asserted: which process wins a plain mutex
    // after a release is up to chance, and a cut-off process first has to connect again.
    const auto deadline = steady::now() + expiry + resume_watch_extra;
    for (;;) {
        r.poll();
        bool all = true;
        for (std::size_t p = 0; p < process_count; ++p) {
            const auto first = r.first_section_after(p, healed);
            all = all && first.has_value();
            c.resumed_ms[p] = first ? to_ms(*first - healed) : -1;
            if (first && (c.any_resumed_ms < 0 || c.resumed_ms[p] < c.any_resumed_ms))
                c.any_resumed_ms = c.resumed_ms[p];
        }
        if (all || steady::now() >= deadline)
            break;
        std::this_thread::sleep_for(poll_interval);
    }
    if (c.any_resumed_ms < 0 || c.any_resumed_ms > expiry.count())
        violated.push_back(std::string(name_of(f)) + ": no process locked within one expiry (" +
                           std::to_string(expiry.count()) + " ms) of the heal");

    if (!c.quorum_side.empty()) {
        c.rate_all_up =
            per_second(r.sections_between(c.quorum_side, up_from, up_to), up_from, up_to);
        c.rate_fault = per_second(r.sections_between(c.quorum_side, fault_from, fault_to),
                                  fault_from, fault_to);
        const std::int64_t settled = fault_from + ms_to_ns(fault_settle);
        c.rate_settled =
            per_second(r.sections_between(c.quorum_side, settled, fault_to), settled, fault_to);
        // In a bridge both sides are majorities only through the shared nodes, where they
        // contend (a reader on one side keeps the other side's writers out there): the rate is
        // printed, and only that locking goes on is asserted.
        if (f == fault::bridge && c.rate_settled == 0)
            violated.push_back("bridge: no process locked from " +
                               std::to_string(fault_settle.count()) + " ms into the fault");
        if (f != fault::bridge && c.rate_settled < least_rate_share * c.rate_all_up)
            violated.push_back(std::string(name_of(f)) + ": the processes with a quorum locked " +
                               figures(c.rate_settled) + "/s in the fault (from " +
                               std::to_string(fault_settle.count()) +
                               " ms in), less than half of " + figures(c.rate_all_up) +
                               "/s with every link up");
        // The fault was in effect: the processes without a quorum got no lock in it (past a
        // per-node deadline, for a grant whose replies were on their way at the cut).
        std::vector<std::size_t> without;
        for (std::size_t p = 0; p < process_count; ++p)
            if (std::find(c.quorum_side.begin(), c.quorum_side.end(), p) == c.quorum_side.end())
                without.push_back(p);
        c.cut_off_sections = r.sections_between(without, fault_from + in_flight_ns, fault_to);
        if (c.cut_off_sections > 0)
            violated.push_back(std::string(name_of(f)) + ": " + std::to_string(c.cut_off_sections) +
                               " section(s) of processes without a quorum during the fault");
    }
    if (held) {
        c.holder_valid_ms = to_ms(held->until_ns - cut_ns);
        std::optional<std::int64_t> rival;
        for (std::size_t p = 1; p < process_count; ++p)
            if (auto first = r.first_section_after(p, cut_ns); first && (!rival || *first < *rival))
                rival = first;
        c.rival_ms = rival ? to_ms(*rival - cut_ns) : -1;
        const long bound = (expiry + retry_pause_max).count();
        if (!rival || c.rival_ms > bound)
            violated.push_back("holder-cut: no other process locked within " +
                               std::to_string(bound) + " ms of the cut");
    }
    return c;
}

// After a one-way fault, once the processes exited at `exited`: the keys left then, and one
// expiry later, when none may be left. Releases and clean-ups were sent on connections whose
// replies were lost a moment before: what they did not reach is on the nodes at the exit, and
// must lapse by itself. A fencing counter (an election's: its terms) has no expiry by design,
// so that terms grow across leaderships, and is not counted.
void check_keys_lapse(const partition_run& r, std::int64_t exited,
                      std::vector<std::string>& left_at_exit,
                      std::vector<std::string>& left_after_expiry,
                      std::vector<std::string>& violated)
{
    left_at_exit = r.keys_left();
    const auto check_at = steady::now() + expiry + key_check_margin -
                          std::chrono::nanoseconds(monotonic_ns() - exited);
    std::this_thread::sleep_until(check_at);  // a key's lifetime, not an event
    left_after_expiry = r.keys_left();
    for (const auto& k : left_after_expiry)
        violated.push_back("one-way: " + k + " is still there one expiry after " +
                           "the processes exited");
}

// Ends the run's workers; after a one-way fault, checks that no key outlived its expiry.
void end_run(partition_run& r, fault f, std::vector<std::string>& left_at_exit,
             std::vector<std::string>& left_after_expiry, std::vector<std::string>& violated)
{
    const std::int64_t exited = r.end_workers();
    if (f == fault::one_way)
        check_keys_lapse(r, exited, left_at_exit, left_after_expiry, violated);
}

// Process p's arguments in mode waiters for a lock of `kind`. With `long_holder`, process 0
// holds 400 ms and announces its holds, with one waiter: three would pass the lock among
// themselves and keep the other processes out for most of the run.
std::vector<std::string> waiter_args(const kind_info& kind, bool long_holder, std::size_t p)
{
    const bool longer = long_holder && p == 0;
    std::vector<std::string> args = {
        "--mode",    "waiters",
        "--waiters", std::to_string(longer ? 1 : waiters_per_process),
        "--work-ms", std::to_string((longer ? holder_hold : hold).count())};
    args.insert(args.end(), kind.args.begin(), kind.args.end());
    if (longer)
        args.insert(args.end(), {"--announce", "1"});
    return args;
}

// Whether the partition scenarios can run here; if not, says why (the scenario passes). Also
// removes what runs that were killed left behind.
bool can_run(const std::string& name)
{
    if (auto why = ns::unavailable()) {
        std::cout << "partition " << name << ": SKIPPED, " << *why << "\n" << std::flush;
        BOOST_TEST_MESSAGE("partition " << name << " skipped: " << *why);
        return false;
    }
    for (const auto& stale : ns::remove_stale())
        std::cout << "removed the namespace " << stale << " of a run that is gone\n";
    return true;
}

// Whether a run passed: no problem with its processes and no violation. Reports each (with
// where the logs are) and keeps the logs of a run that failed.
bool judge(partition_run& r, const std::string& name, const std::vector<std::string>& violated)
{
    const bool passed = r.problems().empty() && violated.empty();
    if (!passed)
        r.keep_logs();
    for (const auto& p : r.problems())
        BOOST_ERROR("partition " << name << ": " << p << " (logs in " << r.dir() << ")");
    for (const auto& v : violated)
        BOOST_ERROR("partition " << name << ": " << v << " (logs in " << r.dir() << ")");
    return passed;
}

// One scenario for one kind of lock.
void partition_scenario(fault f, lock_kind k)
{
    const kind_info kind = info(k);
    const std::string name = std::string(name_of(f)) + " " + kind.name;
    if (!can_run(name))
        return;

    const bool soak = soak_requested();
    const int cycles = soak ? 10 : 1;
    const ms window = f == fault::flapping ? flapping_window : fault_window;
    // Warm-up, then per cycle: all up, the fault, the heal and one expiry; then margin.
    const ms duration = warm_limit + (all_up_window + window + expiry + 2s) * cycles;
    std::mt19937 rng(seed_for(name));

    std::vector<std::string> violated;
    std::vector<cycle> done;
    std::vector<std::string> left_at_exit, left_after_expiry;
    std::size_t most = 0;
    rf::tally t;
    bool passed = false;
    {
        partition_run r([&](std::size_t p) { return waiter_args(kind, f == fault::holder_cut, p); },
                        duration);
        try {
            r.wait_for(
                [&] {
                    for (std::size_t p = 0; p < process_count; ++p)
                        if (!r.first_section_after(p, 0))
                            return false;
                    return true;
                },
                warm_limit, "every process to lock once");
            for (int i = 0; i < cycles; ++i)
                done.push_back(run_cycle(r, f, kind, rng, window, soak, violated));
            end_run(r, f, left_at_exit, left_after_expiry, violated);
        } catch (const std::exception& e) {
            r.problems().push_back(std::string("schedule: ") + e.what());
            r.end_workers();
        }
        const auto& sections = r.sections();
        if (k == lock_kind::semaphore) {
            most = rf::most_at_once_in_validity(sections);
            t.acquisitions = sections.size();
            t.acquire_failures = r.failures();
            if (most > kind.most_holders)
                violated.push_back(std::to_string(most) + " permit holders at once within " +
                                   "their validity, more than " +
                                   std::to_string(kind.most_holders));
        } else {
            t = rf::count(sections, r.failures(), {});
            if (t.overlaps_in_validity > 0)
                violated.push_back(std::to_string(t.overlaps_in_validity) +
                                   " overlap(s) within validity");
        }
        passed = judge(r, name, violated);
    }

    // One line per scenario, then one per cycle (several in the soak profile).
    std::ostringstream out;
    out << "partition " << name << ": " << t.acquisitions << " sections, " << t.acquire_failures
        << " acquires failed, ";
    if (k == lock_kind::semaphore)
        out << "at most " << most << " holders at once within validity";
    else
        out << t.overlaps << " overlaps (" << t.overlaps_in_validity << " within validity)";
    if (f == fault::one_way)
        out << ", keys left when the processes exited " << left_at_exit.size()
            << ", one expiry later " << left_after_expiry.size();
    out << "  " << (passed ? "ok" : "FAIL") << "\n";
    for (const auto& c : done) {
        out << "  " << name_of(c.shape) << ":";
        if (!c.quorum_side.empty())
            out << " quorum side " << figures(c.rate_all_up) << "/s all up, "
                << figures(c.rate_fault) << "/s in the whole fault, " << figures(c.rate_settled)
                << "/s from " << fault_settle.count() << " ms in ("
                << (c.rate_all_up > 0 ? figures(100 * c.rate_settled / c.rate_all_up) : "-") << "%)"
                << (c.quorum_side.size() < process_count
                        ? ", " + std::to_string(c.cut_off_sections) + " sections of the others"
                        : std::string())
                << ";";
        if (c.rival_ms >= 0 || c.holder_valid_ms >= 0)
            out << " holder valid " << c.holder_valid_ms << " ms after the cut, a rival in after "
                << c.rival_ms << " ms;";
        out << " a process locked " << c.any_resumed_ms << " ms after the heal, each ";
        for (std::size_t p = 0; p < c.resumed_ms.size(); ++p)
            out << (p ? "/" : "")
                << (c.resumed_ms[p] < 0 ? std::string("-") : std::to_string(c.resumed_ms[p]));
        out << " ms\n";
    }
    for (std::size_t i = 0; i < left_at_exit.size() && i < 5; ++i)
        out << "  left at exit: " << left_at_exit[i] << "\n";
    std::cout << out.str() << std::flush;
}

// ---- the elections ----
//
// Four processes in mode elect on 5 servers, each with one candidate, which leads for a while
// and resigns, and one observer. Once a leader was granted and every observer names it, a
// fault is applied for 3 s; then the network heals. The faults are the shapes above, with the
// leader's process in process 0's place, except the first:
//
//   leader-cut-off  the leader's process with nodes 0 and 1, the others with nodes 2 to 4
//   holder-cut      the leader's process cut off from every node
//   one-way         nodes 0 to 2 receive the requests of the leader's process and of one more,
//                   their replies to them are dropped
//   bridge          the leader's process and one more reach nodes 0 to 2, the others nodes 2
//                   to 4: two majorities sharing node 2
//   flapping        a random split of nodes and processes every 200 to 500 ms
//
// In bridge and flapping a leader resigns after 250 ms and campaigns again, so that leaders
// keep being granted during the fault; in the others a leader leads longer than the whole run
// (30 s at the most, the warm-up limit included), so that only one that lost its lead
// resigns.
//
// Asserted in each: never two leaders at once (a grant before the previous leader's validity
// ended, unless it had begun to resign), terms grow, no observer names a leader that was not
// granted (election_violations); a leader leads within resume_bound of the heal, and every
// observer names the leader of the moment (value and term) within view_bound of the heal or
// of that leader's grant, whichever came later. Where the leader lost its quorum
// (leader-cut-off, holder-cut): its guard reports the loss (a `lost` line) during the fault,
// and a candidate of another process is granted within successor_bound of the cut, during
// the fault. In bridge, leaders are granted from fault_settle into the fault to its end (one
// side at least can lead). In one-way, one expiry after the processes exited no key of the
// election is left on any node (check_keys_lapse), and the leader's guard reports the loss
// during the fault (it hears from a minority only).
//
// successor_bound is that of the driver's election scenario: the leader's last extension
// reached the other side's nodes before the cut, so its key lapses there within one expiry of
// the cut; the next candidate's attempt under way then fails (within a per-node deadline,
// expiry x 0.05, which it waits for the nodes it cannot reach) and cleans up (a deadline at
// most), it pauses for its refresh period (expiry / 4), and its next attempt, its token's
// write-back and its publication take a per-node deadline each at most:
// 1000 + 250 + 5 x 50 = 1500 ms.
constexpr ms election_hold = 60s;
// With leaders that rotate, the end (SIGTERM to every process at once) may come while a
// campaign publishes; it then resigns without a `lead` line, and an observer may have read its
// publication before its own SIGTERM.
constexpr ms rotating_hold = 250ms;
constexpr ms node_deadline = expiry * 5 / 100;
// end_margin: the check of views of granted leaders stops this much short of the end's first
// SIGTERM. A campaign whose grant is not logged by then began its publication round less than
// a per-node deadline before (the round ends within it, and the grant is logged at once), or
// its process was not scheduled meanwhile: a view of that publication comes later still. 200
// ms more allow for a loaded machine's scheduling.
constexpr ms end_margin = node_deadline + 200ms;
constexpr ms successor_bound = expiry + expiry / 4 + 5 * node_deadline;
// resume_bound: after the heal every node is reachable again, and a request sent before it and
// dropped is never delivered later (the library resets a connection whose requests timed out,
// within a per-node deadline, long before TCP would send them again, 200 ms at the least). So
// a key that no valid leader keeps extended lapses within one expiry of the heal, as after a
// cut above, and the reconnects of the processes that were cut off (connect timeout and
// reconnect pause, 250 ms each at most) are over well before that: the successor bound,
// counted from the heal. A leader still valid at the heal leads at once.
constexpr ms resume_bound = successor_bound;
// view_bound: an observer's client has its connections again within reconnect_max of the heal:
// a connect begun during the cut fails at its timeout (its SYN was dropped), then comes the
// reconnect pause, then a connect that succeeds within round trips on the bridge. The read
// under way then may have begun before, and ends within a per-node deadline, unanswered; the
// observer pauses (a retry delay, 250 ms at most, or its refresh period, expiry / 4, when the
// read was answered), and its next read takes a per-node deadline at most. A leader granted
// later is announced at once or seen at the next look, a pause and a read later:
// 500 + 50 + 250 + 50 = 850 ms from the heal or the grant, whichever came later.
constexpr ms reconnect_max = connect_timeout + 250ms;  // the workers' reconnect_backoff_max
constexpr ms view_bound =
    reconnect_max + node_deadline + std::max(retry_pause_max, expiry / 4) + node_deadline;

// The leadership that began last, or nullptr.
const rf::leadership* latest(const rf::election_log& log)
{
    const rf::leadership* out = nullptr;
    for (const auto& l : log.leaderships)
        if (!out || l.start_ns > out->start_ns)
            out = &l;
    return out;
}

// Whether every process's observer names `l` now.
bool all_name(const rf::election_log& log, const rf::leadership& l)
{
    for (std::size_t p = 0; p < process_count; ++p)
        if (!rf::view_lag_ns(log.views, static_cast<int>(p), l, monotonic_ns()))
            return false;
    return true;
}

std::string election_name(fault f)
{
    return "election-" + std::string(f == fault::minority_split ? "leader-cut-off" : name_of(f));
}

// The links of fault `f` (not flapping) in an election whose leader is process `leader`.
link_matrix election_links(fault f, std::size_t leader, std::mt19937& rng)
{
    if (f == fault::minority_split) {
        std::vector<int> processes(process_count, 1);
        processes[leader] = 0;
        return split({0, 0, 1, 1, 1}, processes);
    }
    std::vector<std::size_t> unused;
    auto m = links_of(f, info(lock_kind::fair), rng, unused);
    for (auto& row : m)
        std::swap(row[0], row[leader]);
    return m;
}

// Whether some leadership was valid at `t`: begun, neither over nor reported lost by then.
bool led_at(const rf::election_log& log, std::int64_t t)
{
    return std::any_of(log.leaderships.begin(), log.leaderships.end(), [&](const auto& l) {
        return l.start_ns <= t && t < l.end_ns() && !(l.lost_ns && *l.lost_ns <= t);
    });
}

std::size_t grants_between(const rf::election_log& log, std::int64_t from, std::int64_t to)
{
    return static_cast<std::size_t>(
        std::count_if(log.leaderships.begin(), log.leaderships.end(),
                      [&](const auto& l) { return l.start_ns >= from && l.start_ns < to; }));
}

void election_partition_scenario(fault f)
{
    const std::string name = election_name(f);
    if (!can_run(name))
        return;
    const bool leader_cut = f == fault::minority_split || f == fault::holder_cut;
    const ms hold = f == fault::bridge || f == fault::flapping ? rotating_hold : election_hold;
    std::mt19937 rng(seed_for(name));

    std::vector<std::string> violated;
    std::optional<rf::leadership> cut_leader, successor;
    std::int64_t cut_ns = 0, healed_ns = 0;
    long resumed_ms = -1, converged_ms = -1;
    std::size_t leaderships = 0, settled_grants = 0;
    std::uint64_t last_term = 0;
    std::vector<std::string> left_at_exit, left_after_expiry;
    bool passed = false;
    {
        partition_run r(
            [&](std::size_t) {
                return std::vector<std::string>{"--mode", "elect", "--work-ms",
                                                std::to_string(hold.count())};
            },
            warm_limit + fault_window + resume_bound + view_bound + 5s);
        try {
            r.wait_for(
                [&] {
                    return latest(r.election()) && all_name(r.election(), *latest(r.election()));
                },
                warm_limit, "a leader that every observer names");
            cut_leader = *latest(r.election());
            if (f == fault::flapping) {
                cut_ns = flap(r, info(lock_kind::fair), rng, fault_window, soak_requested());
            } else {
                cut_ns =
                    r.apply(election_links(f, static_cast<std::size_t>(cut_leader->worker), rng));
                watch_fault(r, name, fault_window);
            }
            healed_ns = r.apply(all_up());
            const auto& log = r.election();
            if (const rf::leadership* next = rf::first_leadership_after(log.leaderships, cut_ns))
                successor = *next;
            for (const auto& l : log.leaderships)
                if (l.worker == cut_leader->worker && l.term == cut_leader->term)
                    cut_leader = l;  // as logged by now: its loss, its resignation
            // In one-way the leader's extensions reach a majority, but only a minority's
            // replies come back: it cannot know it still leads, and must say it lost.
            if ((leader_cut || f == fault::one_way) &&
                (!cut_leader->lost_ns || *cut_leader->lost_ns > healed_ns))
                violated.push_back("the leader " + rf::describe(*cut_leader) +
                                   " reported no loss during the fault");
            if (leader_cut) {
                if (!successor || successor->start_ns > healed_ns)
                    violated.push_back("no new leader during the fault");
                else if (successor->worker == cut_leader->worker)
                    violated.push_back("the new leader " + rf::describe(*successor) +
                                       " is the cut-off process");
                else if (successor->start_ns - cut_ns > ms_to_ns(successor_bound))
                    violated.push_back("the new leader came " +
                                       std::to_string(to_ms(successor->start_ns - cut_ns)) +
                                       " ms after the cut, more than " +
                                       std::to_string(successor_bound.count()) + " ms");
            }
            // Two majorities: one side at least can lead, once what the other side held on
            // the shared node lapsed (as for the locks' bridge, fault_settle).
            settled_grants = grants_between(log, cut_ns + ms_to_ns(fault_settle), healed_ns);
            if (f == fault::bridge && settled_grants == 0)
                violated.push_back("bridge: no leader was granted from " +
                                   std::to_string(fault_settle.count()) + " ms into the fault");

            const auto converge_by = steady::now() + resume_bound + view_bound;
            for (;;) {
                r.poll();
                const rf::leadership* now = latest(r.election());
                if (now && !now->resigned_ns && all_name(r.election(), *now)) {
                    const std::int64_t at = monotonic_ns();
                    converged_ms = to_ms(at - std::max(healed_ns, now->start_ns));
                    if (converged_ms > view_bound.count())
                        violated.push_back("the observers named " + rf::describe(*now) + " " +
                                           std::to_string(converged_ms) +
                                           " ms after the heal or its grant, more than " +
                                           std::to_string(view_bound.count()) + " ms");
                    break;
                }
                if (steady::now() >= converge_by) {
                    violated.push_back("the observers did not all name the leader within " +
                                       std::to_string((resume_bound + view_bound).count()) +
                                       " ms of the heal");
                    break;
                }
                std::this_thread::sleep_for(poll_interval);
            }
            if (led_at(log, healed_ns))
                resumed_ms = 0;
            else if (const rf::leadership* next =
                         rf::first_leadership_after(log.leaderships, healed_ns))
                resumed_ms = to_ms(next->start_ns - healed_ns);
            if (resumed_ms < 0 || resumed_ms > resume_bound.count())
                violated.push_back("no leader within " + std::to_string(resume_bound.count()) +
                                   " ms of the heal");
            end_run(r, f, left_at_exit, left_after_expiry, violated);
        } catch (const std::exception& e) {
            r.problems().push_back(std::string("schedule: ") + e.what());
            r.end_workers();
        }
        for (auto& v :
             rf::election_violations(r.election(), r.end_began_ns() - ms_to_ns(end_margin)))
            violated.push_back(std::move(v));
        leaderships = r.election().leaderships.size();
        for (const auto& l : r.election().leaderships)
            last_term = std::max(last_term, l.term);
        passed = judge(r, name, violated);
    }

    std::ostringstream out;
    out << "partition " << name << ": " << leaderships << " leaderships, last term " << last_term
        << "; ";
    if (cut_leader && hold == election_hold)  // with leaders that rotate, not of interest
        out << "leader w" << cut_leader->worker << " (term " << cut_leader->term << "): valid "
            << to_ms(cut_leader->until_ns - cut_ns)
            << " ms after the fault began, loss reported after "
            << (cut_leader->lost_ns ? std::to_string(to_ms(*cut_leader->lost_ns - cut_ns)) : "-")
            << " ms; ";
    if (successor)
        out << "next leader w" << successor->worker << " (term " << successor->term << ") after "
            << to_ms(successor->start_ns - cut_ns) << " ms"
            << (leader_cut ? " (bound " + std::to_string(successor_bound.count()) + ")" : "")
            << "; ";
    if (f == fault::bridge)
        out << settled_grants << " grants from " << fault_settle.count() << " ms in; ";
    out << "a leader " << resumed_ms << " ms after the heal (bound " << resume_bound.count()
        << "), every observer named it " << converged_ms
        << " ms after the heal or its grant (bound " << view_bound.count() << ")";
    if (f == fault::one_way)
        out << "; keys left when the processes exited " << left_at_exit.size()
            << ", one expiry later " << left_after_expiry.size();
    out << "  " << (passed ? "ok" : "FAIL") << "\n";
    for (std::size_t i = 0; i < left_at_exit.size() && i < 5; ++i)
        out << "  left at exit: " << left_at_exit[i] << "\n";
    std::cout << out.str() << std::flush;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partitions)

#define REDLOCK_PARTITION_CASE(test_name, shape, kind)     \
    BOOST_AUTO_TEST_CASE(test_name)                        \
    {                                                      \
        partition_scenario(fault::shape, lock_kind::kind); \
    }

REDLOCK_PARTITION_CASE(minority_split_mutex, minority_split, mutex)
REDLOCK_PARTITION_CASE(minority_split_fair, minority_split, fair)
REDLOCK_PARTITION_CASE(minority_split_semaphore, minority_split, semaphore)
REDLOCK_PARTITION_CASE(minority_split_rw, minority_split, rw)
REDLOCK_PARTITION_CASE(bridge_mutex, bridge, mutex)
REDLOCK_PARTITION_CASE(bridge_fair, bridge, fair)
REDLOCK_PARTITION_CASE(bridge_semaphore, bridge, semaphore)
REDLOCK_PARTITION_CASE(bridge_rw, bridge, rw)
REDLOCK_PARTITION_CASE(flapping_mutex, flapping, mutex)
REDLOCK_PARTITION_CASE(flapping_fair, flapping, fair)
REDLOCK_PARTITION_CASE(flapping_semaphore, flapping, semaphore)
REDLOCK_PARTITION_CASE(flapping_rw, flapping, rw)
REDLOCK_PARTITION_CASE(one_way_mutex, one_way, mutex)
REDLOCK_PARTITION_CASE(one_way_fair, one_way, fair)
REDLOCK_PARTITION_CASE(one_way_semaphore, one_way, semaphore)
REDLOCK_PARTITION_CASE(one_way_rw, one_way, rw)
REDLOCK_PARTITION_CASE(holder_cut_mutex, holder_cut, mutex)
REDLOCK_PARTITION_CASE(holder_cut_fair, holder_cut, fair)
REDLOCK_PARTITION_CASE(holder_cut_semaphore, holder_cut, semaphore)
REDLOCK_PARTITION_CASE(holder_cut_rw, holder_cut, rw)

#undef REDLOCK_PARTITION_CASE

#define REDLOCK_ELECTION_CASE(test_name, shape)    \
    BOOST_AUTO_TEST_CASE(test_name)                \
    {                                              \
        election_partition_scenario(fault::shape); \
    }

REDLOCK_ELECTION_CASE(election_leader_cut_off_with_a_minority, minority_split)
REDLOCK_ELECTION_CASE(election_holder_cut, holder_cut)
REDLOCK_ELECTION_CASE(election_one_way, one_way)
REDLOCK_ELECTION_CASE(election_bridge, bridge)
REDLOCK_ELECTION_CASE(election_flapping, flapping)

#undef REDLOCK_ELECTION_CASE

BOOST_AUTO_TEST_SUITE_END()
