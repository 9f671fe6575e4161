// SPDX-License-Identifier: BSL-1.0
// redlock_bench: how fast the library locks, against 5 local Redis masters it starts itself
// (or the ones given with --nodes), and how that compares with what the same servers do for
// the same commands sent raw in the same run; scenario cluster starts Redis Clusters of its
// own and uses each as the one node. See docs/benchmarks.md.
//
//   redlock_bench [--scenario all|server|uncontended|degraded|contended|held|cluster|rw|
//                             semaphore|fair|election|scaling[,...]]
//                 [--duration S]
//                 [--concurrency 1,64,256] [--held K] [--nodes URL,...] ...   (--help)
//
// Every scenario prints a line for people and a `RESULT {json}` line per parameter set;
// bench/plot.py turns the RESULT lines of one or more runs into docs/benchmarks.md tables and
// a latency plot. Exit status: 0; 1 when a measurement failed (lock errors, a
// mutual-exclusion violation, unexpected replies) or the program could not run; 2 for bad
// arguments.

#include "raw.hpp"
#include "scenarios.hpp"
#include "servers.hpp"
#include "util.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

struct arguments
{
    std::set<std::string> scenarios;
    double duration_s = 5;
    double warmup_s = 0.5;
    std::vector<int> concurrency = {1, 64, 256};
    int threads = 1;
    std::vector<int> degraded_concurrency = {1, 64};
    int stopped_node = -1;  // the last one
    int held = 10000;
    int expiry_ms = 30000;
    bool watchdog = false;
    int workers = 8;
    int hold_ms = 1;
    std::vector<std::string> retries = {"default", "fast"};
    std::vector<std::string> clients = {"shared", "separate", "processes"};
    std::vector<std::string> contended_locks = {"plain"};
    std::vector<int> depths = {1, 16};
    std::vector<int> raw_connections = {1, 8};
    std::vector<std::string> nodes;
    int servers = 5;
    std::vector<int> masters = {1, 2, 3};
    int cluster_concurrency = 256;
    std::vector<int> cluster_depths = {16, 64, 256};
    int readers = 9;
    int writers = 1;
    int permits = 4;
    int semaphore_workers = 16;
    int fair_workers = 8;
    bool count_events = false;
    std::vector<std::string> scaling_kinds = {"plain", "fair", "semaphore", "rw"};
    std::vector<int> scaling_processes = {2, 8, 32};
    std::string peer;
    std::string peer_script;
};

[[noreturn]] void usage(const std::string& problem, int status = 2)
{
    std::fprintf(
        status == 0 ? stdout : stderr,
        "redlock_bench: %s\n"
        "usage: redlock_bench [options]\n"
        "  --scenario LIST      all (default) or any of server,uncontended,degraded,contended,\n"
        "                       degraded-contended,held,cluster,rw,semaphore,fair,election,\n"
        "                       scaling (not part of all)\n"
        "  --duration S         measured seconds per scenario and parameter set (default 5)\n"
        "  --warmup S           seconds run before each measurement (default 0.5)\n"
        "  --nodes URL,...      use these Redis masters instead of starting servers\n"
        "  --servers N          how many redis-server to start (default 5)\n"
        " uncontended:\n"
        "  --observer none|count  none (default), or an observer (config::observer) on each\n"
        "                       client that counts the lock events\n"
        "  --concurrency LIST   coroutines, each on its own key (default 1,64,256)\n"
        "  --threads N          spread them over N threads, each with an io_context and a\n"
        "                       client of its own (default 1; also for degraded)\n"
        " degraded (uncontended with every node up, then with one stopped by SIGSTOP):\n"
        "  --degraded-concurrency LIST  coroutines, each on its own key (default 1,64)\n"
        "  --stopped-node I     which started server to stop, 0-based (default the last)\n"
        " contended:\n"
        "  --workers N          workers competing for one key (default 8)\n"
        "  --hold-ms MS         how long each holds it (default 1)\n"
        "  --retry LIST         default (random 50-250 ms), fast (random 1-5 ms); default both\n"
        "  --clients LIST       shared (one client), separate (a client per worker in this\n"
        "                       process), processes (a process per worker, forked); default\n"
        "                       all three. --processes = --clients processes\n"
        "  --contended-lock LIST  plain (default), fair (options::fair: the queue on the\n"
        "                       nodes, and a release that hands the key to its head)\n"
        " degraded-contended (contended, a process per worker, all up then one node stopped):\n"
        "  --workers, --hold-ms as for contended; --stopped-node as for degraded\n"
        " held:\n"
        "  --held K             guards held at once (default 10000, at most 1000000)\n"
        "  --expiry-ms MS       their expiry (default 30000); extended every expiry/3\n"
        "  --watchdog           let the library's watchdog extend them (where it has one)\n"
        " server:\n"
        "  --depths LIST        pipeline depths of the raw sender, 1 or even (default 1,16)\n"
        "  --raw-connections LIST  raw connections per node (default 1,8: 1 as the library\n"
        "                       has, 8 to load the servers fully)\n"
        " cluster (a Redis Cluster as the one node, started for it, also with --nodes):\n"
        "  --masters LIST       its masters, one cluster each (default 1,2,3)\n"
        "  --cluster-concurrency C  coroutines, each on its own key (default 256)\n"
        "  --cluster-depths LIST    pipeline depths of its raw bound, 1 or even; the best\n"
        "                       counts (default 16,64,256)\n"
        " rw (a read-write lock, one client), semaphore (one client), fair (a client each);\n"
        " each holds for --hold-ms:\n"
        "  --readers N, --writers N  the read-write lock's workers (default 9 and 1)\n"
        "  --permits N          the semaphore's permits (default 4)\n"
        "  --semaphore-workers N    workers wanting a permit (default 16)\n"
        "  --fair-workers N     workers of the fair lock, and of the unfair one it is set\n"
        "                       against (default 8)\n"
        " scaling (a process per worker on one lock, each holding it for --hold-ms; the\n"
        " servers' INFO counters per grant; first a row of one process on a key of its own):\n"
        "  --scaling-kinds LIST plain,fair,semaphore,rw (default all four); the semaphore has\n"
        "                       --permits permits, rw's process 0 writes and the others read\n"
        "  --scaling-processes LIST  processes of each row (default 2,8,32; at most 128)\n"
        "  --peer node-redlock  after each plain row, the same by node-redlock (its script,\n"
        "                       bench/peer/run.sh) on the same servers\n"
        "  --peer-script PATH   the peer's script (default bench/peer/run.sh in the source)\n",
        problem.c_str());
    std::exit(status);
}

std::vector<std::string> split(std::string_view list)
{
    std::vector<std::string> out;
    while (true) {
        const auto comma = list.find(',');
        if (!list.substr(0, comma).empty()) {
            out.emplace_back(list.substr(0, comma));
        }
        if (comma == std::string_view::npos) {
            return out;
        }
        list.remove_prefix(comma + 1);
    }
}

int integer(std::string_view flag, std::string_view text, int lo, int hi)
{
    int v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
        usage(std::string(flag) + " wants a whole number in " + std::to_string(lo) + ".." +
              std::to_string(hi) + ", not '" + std::string(text) + "'");
    }
    return v;
}

double decimal(std::string_view flag, const std::string& text, double lo, double hi)
{
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v >= lo && v <= hi)) {
        usage(std::string(flag) + " wants a number of seconds in " + bench::json::number(lo) +
              ".." + bench::json::number(hi) + ", not '" + text + "'");
    }
    return v;
}

std::vector<std::string> one_of(std::string_view flag, const std::string& text,
                                std::set<std::string> allowed)
{
    auto items = split(text);
    if (items.empty()) {
        usage(std::string(flag) + " wants a list");
    }
    for (const auto& i : items) {
        if (!allowed.count(i)) {
            usage(std::string(flag) + ": unknown value '" + i + "'");
        }
    }
    return items;
}

arguments parse(int argc, char** argv)
{
    arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (flag == "--help" || flag == "-h") {
            usage("measures redlock against local Redis masters", 0);
        }
        if (flag == "--watchdog") {
            a.watchdog = true;
            continue;
        }
        if (flag == "--processes") {
            a.clients = {"processes"};
            continue;
        }
        if (i + 1 >= argc) {
            usage("unknown flag or missing value: " + std::string(flag));
        }
        const std::string value = argv[++i];
        auto ints = [&](int lo, int hi) {
            std::vector<int> out;
            for (const auto& item : split(value)) {
                out.push_back(integer(flag, item, lo, hi));
            }
            if (out.empty()) {
                usage(std::string(flag) + " wants a list");
            }
            return out;
        };
        if (flag == "--scenario") {
            for (const auto& s : one_of(
                     flag, value,
                     {"all", "server", "uncontended", "degraded", "contended", "degraded-contended",
                      "held", "cluster", "rw", "semaphore", "fair", "election", "scaling"})) {
                a.scenarios.insert(s);
            }
        } else if (flag == "--observer") {
            if (value != "none" && value != "count") {
                usage("--observer: none or count");
            }
            a.count_events = value == "count";
        } else if (flag == "--duration") {
            a.duration_s = decimal(flag, value, 0.1, 3600);
        } else if (flag == "--warmup") {
            a.warmup_s = decimal(flag, value, 0, 60);
        } else if (flag == "--concurrency") {
            a.concurrency = ints(1, 100000);
        } else if (flag == "--threads") {
            a.threads = integer(flag, value, 1, 256);
        } else if (flag == "--degraded-concurrency") {
            a.degraded_concurrency = ints(1, 100000);
        } else if (flag == "--stopped-node") {
            a.stopped_node = integer(flag, value, 0, 31);
        } else if (flag == "--held") {
            a.held = integer(flag, value, 1, 1000000);
        } else if (flag == "--expiry-ms") {
            a.expiry_ms = integer(flag, value, 100, 3600000);
        } else if (flag == "--workers") {
            a.workers = integer(flag, value, 1, 10000);
        } else if (flag == "--hold-ms") {
            a.hold_ms = integer(flag, value, 0, 60000);
        } else if (flag == "--retry") {
            a.retries = one_of(flag, value, {"default", "fast"});
        } else if (flag == "--clients") {
            a.clients = one_of(flag, value, {"shared", "separate", "processes"});
        } else if (flag == "--contended-lock") {
            a.contended_locks = one_of(flag, value, {"plain", "fair"});
        } else if (flag == "--depths") {
            a.depths = ints(1, 4096);
            for (int d : a.depths) {
                if (d != 1 && d % 2 != 0) {
                    usage("--depths: a depth is 1 or even (SET and delete go in pairs)");
                }
            }
        } else if (flag == "--masters") {
            a.masters = ints(1, 16);
        } else if (flag == "--cluster-concurrency") {
            a.cluster_concurrency = integer(flag, value, 1, 100000);
        } else if (flag == "--cluster-depths") {
            a.cluster_depths = ints(1, 4096);
            for (int d : a.cluster_depths) {
                if (d != 1 && d % 2 != 0) {
                    usage("--cluster-depths: a depth is 1 or even (SET and delete go in pairs)");
                }
            }
        } else if (flag == "--readers") {
            a.readers = integer(flag, value, 0, 10000);
        } else if (flag == "--writers") {
            a.writers = integer(flag, value, 0, 10000);
        } else if (flag == "--permits") {
            a.permits = integer(flag, value, 1, 10000);
        } else if (flag == "--semaphore-workers") {
            a.semaphore_workers = integer(flag, value, 1, 10000);
        } else if (flag == "--fair-workers") {
            a.fair_workers = integer(flag, value, 1, 10000);
        } else if (flag == "--scaling-kinds") {
            a.scaling_kinds = one_of(flag, value, {"plain", "fair", "semaphore", "rw"});
        } else if (flag == "--scaling-processes") {
            a.scaling_processes = ints(1, bench::scaling_max_processes);
        } else if (flag == "--peer") {
            if (value != "node-redlock") {
                usage("--peer: node-redlock is the one peer");
            }
            a.peer = value;
        } else if (flag == "--peer-script") {
            a.peer_script = value;
        } else if (flag == "--raw-connections") {
            a.raw_connections = ints(1, 1000);
        } else if (flag == "--nodes") {
            a.nodes = split(value);
            if (a.nodes.empty()) {
                usage("--nodes wants URL,URL,...");
            }
        } else if (flag == "--servers") {
            a.servers = integer(flag, value, 1, 32);
        } else {
            usage("unknown flag: " + std::string(flag));
        }
    }
    if (a.scenarios.empty() || a.scenarios.count("all")) {
        a.scenarios = {"server",  "uncontended", "degraded", "contended", "degraded-contended",
                       "held",    "cluster",     "rw",       "semaphore", "fair",
                       "election"};
    }
    if (a.readers + a.writers == 0) {
        usage("--readers and --writers: the read-write lock needs a worker");
    }
    if (a.stopped_node >= a.servers) {
        usage("--stopped-node must name one of the --servers started");
    }
    return a;
}

std::string first_line_with(const std::string& file, std::string_view prefix)
{
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) == 0) {
            const auto colon = line.find(':');
            return colon == std::string::npos ? line : line.substr(colon + 2);
        }
    }
    return {};
}

std::string loadavg()
{
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    in >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

void print_meta(const arguments& a, const bench::run_settings& rs)
{
    std::string version;
    try {
        const auto info = bench::node_request(rs.urls.at(0), {"INFO", "server"});
        const auto at = info.find("redis_version:");
        if (at != std::string::npos) {
            version = info.substr(at + 14, info.find('\r', at) - at - 14);
        }
    } catch (const std::exception&) {
        version = "unknown";  // e.g. a node that does not answer INFO (ACL)
    }
    utsname u{};
    ::uname(&u);
    const std::string cpu = first_line_with("/proc/cpuinfo", "model name");
    bench::say(bench::strf(
        "redlock_bench: %zu nodes (%s), redis %s, %u CPUs (%s), kernel %s, "
        "load average %s",
        rs.urls.size(), a.nodes.empty() ? "started here" : "given", version.c_str(),
        std::thread::hardware_concurrency(), cpu.c_str(), u.release, loadavg().c_str()));
    bench::result(bench::json()
                      .add("scenario", "meta")
                      .add("nodes", rs.urls.size())
                      .add("servers_started", a.nodes.empty())
                      .add("redis_version", version)
                      .add("cpus", std::thread::hardware_concurrency())
                      .add("cpu_model", cpu)
                      .add("kernel", std::string(u.release))
                      .add("compiler", std::string(__VERSION__))
#ifdef NDEBUG
                      .add("optimized", true)
#else
                      .add("optimized", false)
#endif
                      .add("duration_s", a.duration_s)
                      .add("observer", a.count_events ? "count" : "none")
                      .add("loadavg", loadavg()));
}

}  // namespace

int main(int argc, char** argv)
{
    const arguments a = parse(argc, argv);
    bench::install_cleanup_handlers();
    int status = 0;
    try {
        std::optional<bench::local_servers> servers;
        bench::run_settings rs;
        if (a.nodes.empty()) {
            servers.emplace(a.servers);
            rs.urls = servers->urls();
            for (pid_t p : servers->pids()) {
                rs.server_pids.push_back(static_cast<int>(p));
            }
        } else {
            rs.urls = a.nodes;
        }
        rs.duration = std::chrono::duration_cast<bench::clock::duration>(
            std::chrono::duration<double>(a.duration_s));
        rs.warmup = std::chrono::duration_cast<bench::clock::duration>(
            std::chrono::duration<double>(a.warmup_s));
        rs.threads = a.threads;
        rs.count_events = a.count_events;
        rs.key_prefix = "redlock-bench:" + std::to_string(::getpid()) + ":" +
                        std::to_string(bench::clock::now().time_since_epoch().count() % 1000000);
        print_meta(a, rs);

        bench::server_bound bound;
        if (a.scenarios.count("server")) {
            bound = bench::run_server(rs, a.depths, a.raw_connections);
        }
        if (a.scenarios.count("uncontended")) {
            for (int c : a.concurrency) {
                bench::run_uncontended(rs, c, bound);
            }
        }
        if (a.scenarios.count("degraded")) {
            const int stopped = a.stopped_node >= 0 ? a.stopped_node : a.servers - 1;
            for (int c : a.degraded_concurrency) {
                bench::run_degraded(rs, c, static_cast<std::size_t>(stopped));
            }
        }
        if (a.scenarios.count("contended")) {
            for (const auto& lock : a.contended_locks) {
                for (const auto& r : a.retries) {
                    for (const auto& c : a.clients) {
                        const auto kind = r == "fast" ? bench::retry_kind::fast
                                                      : bench::retry_kind::library_default;
                        const auto who = c == "separate"    ? bench::contenders::separate_clients
                                         : c == "processes" ? bench::contenders::processes
                                                            : bench::contenders::shared_client;
                        bench::run_contended(rs, a.workers, std::chrono::milliseconds(a.hold_ms),
                                             kind, who, bound, {}, lock == "fair");
                    }
                }
            }
        }
        if (a.scenarios.count("degraded-contended")) {
            const int stopped = a.stopped_node >= 0 ? a.stopped_node : a.servers - 1;
            bench::run_degraded_contended(rs, a.workers, std::chrono::milliseconds(a.hold_ms),
                                          static_cast<std::size_t>(stopped), bound);
        }
        if (a.scenarios.count("held")) {
            bench::run_held(rs, a.held, std::chrono::milliseconds(a.expiry_ms), a.watchdog);
        }
        if (a.scenarios.count("cluster")) {
            bench::run_cluster(rs, a.masters, a.cluster_concurrency, a.cluster_depths);
        }
        const std::chrono::milliseconds hold(a.hold_ms);
        if (a.scenarios.count("rw")) {
            bench::run_rw(rs, a.readers, a.writers, hold);
        }
        if (a.scenarios.count("semaphore")) {
            bench::run_semaphore(rs, a.permits, a.semaphore_workers, hold);
        }
        if (a.scenarios.count("fair")) {
            bench::run_fair(rs, a.fair_workers, hold);
        }
        if (a.scenarios.count("election")) {
            // A crash costs about an expiry: a short one keeps the scenario to seconds.
            bench::run_election(rs, 3, std::chrono::milliseconds(2000));
        }
        if (a.scenarios.count("scaling")) {
            bench::scaling_settings s;
            s.kinds = a.scaling_kinds;
            s.processes = a.scaling_processes;
            s.hold = hold;
            s.permits = a.permits;
            s.peer = a.peer;
            s.peer_script = a.peer_script;
            bench::run_scaling(rs, s);
        }
        bench::result(bench::json().add("scenario", "meta_end").add("loadavg", loadavg()));
        if (bench::failures() > 0) {
            std::fprintf(stderr, "redlock_bench: %d measurement(s) FAILED (see above)\n",
                         bench::failures());
            status = 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "redlock_bench: %s\n", e.what());
        return 1;
    }
    return status;
}
