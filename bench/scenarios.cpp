// SPDX-License-Identifier: BSL-1.0
#include "scenarios.hpp"

#include "processes.hpp"
#include "raw.hpp"
#include "servers.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <functional>
#include <latch>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

namespace bench {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

void rethrow(std::exception_ptr e)
{
    if (e) {
        std::rethrow_exception(e);
    }
}

asio::awaitable<void> sleep_until(clock::time_point t)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, t);
    co_await timer.async_wait(asio::deferred);
}

asio::awaitable<void> sleep_for(clock::duration d)
{
    co_await sleep_until(clock::now() + d);
}

// The driver waits for the workers it started. Single-threaded io_context: no locking.
class join_counter
{
  public:
    explicit join_counter(asio::io_context& io) : timer_(io, clock::time_point::max()) {}
    void add(std::size_t n) { running_ += n; }
    void done()
    {
        if (--running_ == 0) {
            timer_.cancel();
        }
    }
    asio::awaitable<void> wait()
    {
        while (running_ > 0) {
            co_await timer_.async_wait(asio::as_tuple(asio::deferred));
        }
    }

  private:
    std::size_t running_ = 0;
    asio::steady_timer timer_;
};

asio::awaitable<void> shutdown(redlock::client& c)
{
    auto [ec] = co_await c.async_shutdown(asio::as_tuple(asio::deferred));
    if (ec) {
        say("warning: client shutdown: " + ec.message());
    }
}

// The library's watchdog, where it has one (options::auto_extend): found at compile time so
// that the benchmark builds against versions with and without it.
template <class O>
concept has_auto_extend = requires(O o)
{
    o.auto_extend = true;
};

template <class O>
bool enable_auto_extend(O& o)
{
    if constexpr (has_auto_extend<O>) {
        o.auto_extend = true;
        return true;
    } else {
        return false;
    }
}

std::string ratio_text(double r)
{
    return r > 0 ? strf("%.2f", r) : std::string("-");
}

// Server CPU is unknown (negative) when the servers were given with --nodes.
std::string cores_text(double cores)
{
    return cores < 0 ? std::string("(unknown)") : strf("%.2f", cores);
}

}  // namespace

bool library_has_watchdog()
{
    return has_auto_extend<redlock::options>;
}

// ---------------------------------------------------------------------------------------
// (d) server

server_bound run_server(const run_settings& rs, const std::vector<int>& depths,
                        const std::vector<int>& connection_counts)
{
    const std::vector<std::string>& nodes = rs.urls;
    server_bound b;

    auto lat = raw_latency(nodes, rs.warmup, rs.duration, rs.key_prefix + ":raw");
    b.node_set_p50_us = lat.node_set.percentile_us(50);
    b.round_set_quorum_p50_us = lat.round_set_quorum.percentile_us(50);
    b.round_delete_p50_us = lat.round_delete.percentile_us(50);
    b.round_set_quorum_after_idle_p50_us = lat.round_set_quorum_after_idle.percentile_us(50);
    say(
        strf("server round trips, no load: one node SET NX PX p50 %.0f us, compare-and-delete "
             "p50 %.0f us; all %zu nodes at once: SET to the quorum's reply p50 %.0f us, to the "
             "last p50 %.0f us, compare-and-delete to the last p50 %.0f us; SET to the quorum's "
             "reply after %lld ms idle p50 %.0f us",
             b.node_set_p50_us, lat.node_delete.percentile_us(50), nodes.size(),
             b.round_set_quorum_p50_us, lat.round_set.percentile_us(50), b.round_delete_p50_us,
             static_cast<long long>(idle_pause.count()), b.round_set_quorum_after_idle_p50_us));
    result(
        json()
            .add("scenario", "server")
            .add("measure", "latency")
            .add("nodes", nodes.size())
            .add("node_set_us", latency_json(lat.node_set))
            .add("node_delete_us", latency_json(lat.node_delete))
            .add("round_set_quorum_us", latency_json(lat.round_set_quorum))
            .add("round_set_us", latency_json(lat.round_set))
            .add("round_delete_us", latency_json(lat.round_delete))
            .add("idle_pause_ms", idle_pause.count())
            .add("round_set_quorum_after_idle_us", latency_json(lat.round_set_quorum_after_idle)));

    for (int connections : connection_counts) {
        for (int depth : depths) {
            auto f =
                raw_throughput(nodes, depth, connections, rs.warmup, rs.duration,
                               rs.key_prefix + ":raw:" + std::to_string(depth), rs.server_pids);
            double& slot = depth == 1 ? b.unpipelined_cycles_per_s : b.pipelined_cycles_per_s;
            slot = std::max(slot, f.cycles_per_s);
            say(strf(
                "server bound, depth %d, %d connection(s) per node: %s commands/s = %s "
                "cycles/s (SET NX PX + compare-and-delete on %zu nodes), batch p50 %.0f us; "
                "client %.2f cores, servers %s cores%s",
                depth, connections, grouped(f.commands_per_s).c_str(),
                grouped(f.cycles_per_s).c_str(), nodes.size(), f.batch_latency.percentile_us(50),
                f.client_cores, cores_text(f.servers_cores).c_str(),
                f.replies_as_expected ? "" : "; WARNING: unexpected replies"));
            if (!f.replies_as_expected) {
                note_failure("server: the raw sender got replies other than OK and 1, first: " +
                             f.first_unexpected);
            }
            result(json()
                       .add("scenario", "server")
                       .add("measure", "throughput")
                       .add("nodes", nodes.size())
                       .add("depth", depth)
                       .add("connections_per_node", connections)
                       .add("duration_s", f.seconds)
                       .add("commands", f.commands)
                       .add("commands_per_s", f.commands_per_s)
                       .add("cycles_per_s", f.cycles_per_s)
                       .add("batch_us", latency_json(f.batch_latency))
                       .add("client_cores", f.client_cores)
                       .add("servers_cores", f.servers_cores)
                       .add("replies_as_expected", f.replies_as_expected));
        }
    }
    return b;
}

// ---------------------------------------------------------------------------------------
// (a) uncontended

namespace {

// What one uncontended measurement saw.
struct uncontended_figures
{
    double seconds = 0;
    std::int64_t cycles = 0;
    std::int64_t acquire_errors = 0;
    std::int64_t release_errors = 0;
    std::string first_error;
    samples acquire;
    samples release;
    double client_cores = 0;
    double servers_cores = 0;
    double others_cores = -1;
    int threads = 1;  // each with a client of its own
    // Lock events seen by the observer that counts them (--observer count).
    std::int64_t events = 0;

    double rate() const { return cycles > 0 ? static_cast<double>(cycles) / seconds : 0.0; }
};

// `j` with the figures of one uncontended measurement, as the scenarios that run one report
// them.
json& add_figures(json& j, uncontended_figures& f)
{
    return j.add("duration_s", f.seconds)
        .add("cycles", f.cycles)
        .add("cycles_per_s", f.rate())
        .add("acquire_us", latency_json(f.acquire))
        .add("release_us", latency_json(f.release))
        .add("acquire_errors", f.acquire_errors)
        .add("release_errors", f.release_errors)
        .add("client_cores", f.client_cores)
        .add("servers_cores", f.servers_cores);
}

// One thread of an uncontended measurement: an io_context and a client of its own, as a
// service runs a client per core, and its coroutines each looping acquire + release on a key
// of their own. The measuring thread moves every shard through the phases at once.
struct uncontended_shard
{
    enum class phase { warming_up, measuring, stopping };

    asio::io_context io{1};
    redlock::client client;
    uncontended_figures f;

    explicit uncontended_shard(const run_settings& rs) : client(io.get_executor(), config_of(rs)) {}

    // With --observer count, an observer that counts the events: the least any observer does.
    redlock::config config_of(const run_settings& rs)
    {
        auto cfg = redlock::config::from_urls(rs.urls);
        if (rs.count_events) {
            cfg.observer = [this](const redlock::lock_event&) { ++f.events; };
        }
        return cfg;
    }

    asio::awaitable<void> worker(redlock::mutex m, const std::atomic<phase>& now)
    {
        while (now != phase::stopping) {
            const auto a = clock::now();
            auto [ec, g] = co_await m.async_acquire(asio::as_tuple(asio::deferred));
            const auto b = clock::now();
            if (ec) {
                if (f.acquire_errors++ == 0) {
                    f.first_error = ec.message() + "\n" + g.last_report().to_string();
                }
                co_await sleep_for(10ms);
                continue;
            }
            auto [rec] = co_await g.async_release(asio::as_tuple(asio::deferred));
            const auto c = clock::now();
            if (rec && f.release_errors++ == 0) {
                f.first_error = rec.message() + "\n" + g.last_report().to_string();
            }
            if (now == phase::measuring) {
                ++f.cycles;
                f.acquire.add(b - a);
                f.release.add(c - b);
            }
        }
    }

    // Connects (one cycle on a key of its own), says so through `connected`, then runs
    // `concurrency` workers until the phase is stopping, and shuts the client down.
    // An exception (a worker's, or the connect's) ends the shard; `error` keeps it for the
    // measuring thread, and `connected` is still said, so that nobody waits for it.
    void run(const run_settings& rs, int concurrency, const std::string& tag,
             const std::atomic<phase>& now, const std::function<void()>& connected)
    {
        bool said = false;
        try {
            start(rs, concurrency, tag, now, [&] {
                said = true;
                connected();
            });
            io.run();
        } catch (...) {
            error = std::current_exception();
        }
        if (!said) {
            connected();
        }
    }

    std::exception_ptr error;

  private:
    void start(const run_settings& rs, int concurrency, const std::string& tag,
               const std::atomic<phase>& now, const std::function<void()>& connected)
    {
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                {
                    auto m = client.make_mutex(rs.key_prefix + ":" + tag + ":connect");
                    auto g = co_await m.acquire();
                    co_await g.release();
                }
                connected();
                join_counter workers(io);
                workers.add(static_cast<std::size_t>(concurrency));
                for (int i = 0; i < concurrency; ++i) {
                    auto m = client.make_mutex(rs.key_prefix + ":" + tag + ":" + std::to_string(i));
                    asio::co_spawn(io, worker(std::move(m), now), [&](std::exception_ptr e) {
                        workers.done();
                        rethrow(e);
                    });
                }
                co_await workers.wait();
                co_await shutdown(client);
            },
            rethrow);
    }
};

// `concurrency` coroutines, each looping acquire + release on its own key (named with `tag`
// so that measurements never share keys), for the warm-up and then the measured window,
// spread over `rs.threads` threads with a client each. `connected` runs once every client
// has a connection to every node, before the workers start: a fault applied there meets
// clients that are already connected, as a node that fails under running clients does.
uncontended_figures measure_uncontended(const run_settings& rs, int concurrency,
                                        const std::string& tag,
                                        const std::function<void()>& connected = {})
{
    using phase = uncontended_shard::phase;
    const int threads = std::max(1, std::min(rs.threads, concurrency));
    std::atomic<phase> now{phase::warming_up};
    std::latch all_connected(threads);
    std::vector<std::unique_ptr<uncontended_shard>> shards;
    for (int i = 0; i < threads; ++i) {
        shards.push_back(std::make_unique<uncontended_shard>(rs));
    }
    std::vector<std::thread> running;
    for (int i = 0; i < threads; ++i) {
        // Shard i runs the workers i, i + threads, ...: every coroutine on a key of its own.
        const int share = concurrency / threads + (i < concurrency % threads ? 1 : 0);
        running.emplace_back([&, i, share] {
            shards[static_cast<std::size_t>(i)]->run(rs, share, tag + "t" + std::to_string(i), now,
                                                     [&] { all_connected.count_down(); });
        });
    }
    all_connected.wait();
    if (connected) {
        connected();
    }
    cpu_meter cpu(rs.server_pids);
    std::this_thread::sleep_for(rs.warmup);
    now = phase::measuring;
    const clock::time_point t0 = clock::now();
    cpu.start();
    std::this_thread::sleep_for(rs.duration);
    now = phase::stopping;
    const clock::time_point t1 = clock::now();
    cpu.stop();
    for (auto& t : running) {
        t.join();
    }
    uncontended_figures f;
    for (auto& shard : shards) {
        if (shard->error) {
            std::rethrow_exception(shard->error);
        }
        f.cycles += shard->f.cycles;
        f.acquire_errors += shard->f.acquire_errors;
        f.release_errors += shard->f.release_errors;
        f.events += shard->f.events;
        if (f.first_error.empty()) {
            f.first_error = shard->f.first_error;
        }
        f.acquire.merge(shard->f.acquire);
        f.release.merge(shard->f.release);
    }
    f.seconds = seconds(t1 - t0);
    f.client_cores = cpu.client_cores();
    f.servers_cores = cpu.servers_cores();
    f.others_cores = cpu.others_cores();
    f.threads = threads;
    return f;
}

// Keeps one server process stopped (SIGSTOP) for its lifetime and continues it (SIGCONT) when
// it goes, also when a measurement throws: a server left stopped would hang every later
// scenario and the final shutdown.
class stopped_process
{
  public:
    explicit stopped_process(int pid) : pid_(pid)
    {
        if (::kill(pid_, SIGSTOP) != 0) {
            throw std::system_error(errno, std::generic_category(),
                                    "SIGSTOP to server " + std::to_string(pid_));
        }
    }
    ~stopped_process() { ::kill(pid_, SIGCONT); }
    stopped_process(const stopped_process&) = delete;
    stopped_process& operator=(const stopped_process&) = delete;

  private:
    int pid_;
};

}  // namespace

void run_uncontended(const run_settings& rs, int concurrency, const server_bound& bound)
{
    auto f = measure_uncontended(rs, concurrency, "u" + std::to_string(concurrency));
    const double rate = f.rate();
    const double vs_pipelined = ratio(rate, bound.pipelined_cycles_per_s);
    const double vs_unpipelined = ratio(rate, bound.unpipelined_cycles_per_s);
    const double p50 = f.acquire.percentile_us(50);
    const double release_p50 = f.release.percentile_us(50);
    // A release is one round like an acquire (a compare-and-delete instead of a SET), and
    // needs only the quorum's answers too: it should cost about what the acquire costs.
    const double release_vs_acquire = ratio(release_p50, p50);
    say(
        strf("uncontended C=%d: %s cycles/s (%s of the pipelined server bound, %s of the "
             "unpipelined), acquire p50 %.0f us p99 %.0f us p99.9 %.0f us (%s x the raw %zu-node "
             "quorum round), release p50 %.0f us (%s x the acquire p50); errors %lld/%lld; "
             "client %.2f cores (%s cycles per client CPU-second, %d thread(s)), servers %s "
             "cores",
             concurrency, grouped(rate).c_str(), ratio_text(vs_pipelined).c_str(),
             ratio_text(vs_unpipelined).c_str(), p50, f.acquire.percentile_us(99),
             f.acquire.percentile_us(99.9),
             ratio_text(ratio(p50, bound.round_set_quorum_p50_us)).c_str(), rs.urls.size(),
             release_p50, ratio_text(release_vs_acquire).c_str(),
             static_cast<long long>(f.acquire_errors), static_cast<long long>(f.release_errors),
             f.client_cores, grouped(ratio(rate, f.client_cores)).c_str(), f.threads,
             cores_text(f.servers_cores).c_str()));
    if (!f.first_error.empty()) {
        say("first error: " + f.first_error);
    }
    if (f.acquire_errors + f.release_errors > 0) {
        note_failure(strf("uncontended C=%d: %lld acquire and %lld release errors", concurrency,
                          static_cast<long long>(f.acquire_errors),
                          static_cast<long long>(f.release_errors)));
    }
    result(add_figures(json()
                           .add("scenario", "uncontended")
                           .add("concurrency", concurrency)
                           .add("threads", f.threads)
                           .add("nodes", rs.urls.size()),
                       f)
               .add("vs_server_pipelined", vs_pipelined)
               .add("vs_server_unpipelined", vs_unpipelined)
               .add("acquire_p50_vs_raw_round", ratio(p50, bound.round_set_quorum_p50_us))
               .add("release_p50_vs_raw_round", ratio(release_p50, bound.round_delete_p50_us))
               .add("release_p50_vs_acquire_p50", release_vs_acquire)
               .add("cycles_per_client_cpu_s", ratio(rate, f.client_cores))
               .add("observer_events", f.events));
}

// ---------------------------------------------------------------------------------------
// (e) degraded

void run_degraded(const run_settings& rs, int concurrency, std::size_t stopped_node)
{
    if (stopped_node >= rs.server_pids.size()) {
        say("degraded: skipped, it needs the servers this program starts (not --nodes)");
        return;
    }
    const std::string c = std::to_string(concurrency);
    auto up = measure_uncontended(rs, concurrency, "d" + c + ":up");
    uncontended_figures down;
    {
        // Continued when this block ends, whether the measurement returns or throws.
        std::optional<stopped_process> silenced;
        down = measure_uncontended(rs, concurrency, "d" + c + ":down",
                                   [&] { silenced.emplace(rs.server_pids[stopped_node]); });
    }
    const double up_acquire = up.acquire.percentile_us(50);
    const double up_release = up.release.percentile_us(50);
    const double down_acquire = down.acquire.percentile_us(50);
    const double down_release = down.release.percentile_us(50);
    const double throughput = ratio(down.rate(), up.rate());
    const double acquire_ratio = ratio(down_acquire, up_acquire);
    const double release_ratio = ratio(down_release, up_release);
    say(strf(
        "degraded C=%d, node %zu of %zu stopped: %s cycles/s against %s with all up (%s); "
        "acquire p50 %.0f us against %.0f (%s), p99 %.0f us, max %.0f us; release p50 "
        "%.0f us against %.0f (%s), p99 %.0f us, max %.0f us; errors %lld/%lld",
        concurrency, stopped_node, rs.urls.size(), grouped(down.rate()).c_str(),
        grouped(up.rate()).c_str(), ratio_text(throughput).c_str(), down_acquire, up_acquire,
        ratio_text(acquire_ratio).c_str(), down.acquire.percentile_us(99), down.acquire.max_us(),
        down_release, up_release, ratio_text(release_ratio).c_str(), down.release.percentile_us(99),
        down.release.max_us(), static_cast<long long>(up.acquire_errors + down.acquire_errors),
        static_cast<long long>(up.release_errors + down.release_errors)));
    for (const auto* f : {&up, &down}) {
        if (!f->first_error.empty()) {
            say("first error: " + f->first_error);
        }
    }
    // One silent node of five leaves a quorum: every acquire and release must still succeed.
    if (up.acquire_errors + up.release_errors + down.acquire_errors + down.release_errors > 0) {
        note_failure(strf("degraded C=%d: %lld acquire and %lld release errors", concurrency,
                          static_cast<long long>(up.acquire_errors + down.acquire_errors),
                          static_cast<long long>(up.release_errors + down.release_errors)));
    }
    result(json()
               .add("scenario", "degraded")
               .add("concurrency", concurrency)
               .add("nodes", rs.urls.size())
               .add("stopped_nodes", 1)
               .add("duration_s", down.seconds)
               .add("up_cycles", up.cycles)
               .add("up_cycles_per_s", up.rate())
               .add("up_acquire_us", latency_json(up.acquire))
               .add("up_release_us", latency_json(up.release))
               .add("cycles", down.cycles)
               .add("cycles_per_s", down.rate())
               .add("acquire_us", latency_json(down.acquire))
               .add("release_us", latency_json(down.release))
               .add("throughput_vs_up", throughput)
               .add("acquire_p50_vs_up", acquire_ratio)
               .add("release_p50_vs_up", release_ratio)
               .add("acquire_errors", up.acquire_errors + down.acquire_errors)
               .add("release_errors", up.release_errors + down.release_errors)
               .add("client_cores", down.client_cores)
               .add("servers_cores", down.servers_cores));
}

// ---------------------------------------------------------------------------------------
// (b) contended

namespace {

// One acquisition, in the order the lock changed hands.
struct contended_record
{
    int worker;
    clock::time_point acquired;
    clock::time_point release_start;
    clock::time_point release_done;
};

// What the workers of a contended run share: in memory mapped shared, so that workers in
// processes of their own (forked) count into it as coroutines of this process do. Its size
// is fixed; acquisitions beyond `capacity` are counted but not recorded.
struct contended_shared
{
    static constexpr std::size_t capacity = 1'000'000;
    std::atomic<bool> stop{false};
    std::atomic<int> holders{0};  // in the critical section right now: never more than 1
    std::atomic<std::int64_t> violations{0};
    std::atomic<std::int64_t> overran_validity{0};
    std::atomic<std::int64_t> acquire_errors{0};
    std::atomic<std::int64_t> release_errors{0};
    std::atomic<std::size_t> recorded{0};
    std::atomic<bool> error_noted{false};
    char first_error[1024];
    contended_record records[capacity];

    void note_error(const std::string& what)
    {
        if (!error_noted.exchange(true)) {
            std::snprintf(first_error, sizeof first_error, "%s", what.c_str());
        }
    }
};

// A worker: acquire, hold for `hold`, release, until the run stops.
asio::awaitable<void> contended_worker(contended_shared& sh, int w, redlock::mutex m,
                                       milliseconds hold)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!sh.stop) {
        auto [ec, g] = co_await m.async_acquire(asio::as_tuple(asio::deferred));
        const auto acquired = clock::now();
        if (ec) {
            ++sh.acquire_errors;
            sh.note_error(ec.message() + "\n" + g.last_report().to_string());
            continue;
        }
        if (++sh.holders != 1) {
            ++sh.violations;
        }
        const std::size_t index = sh.recorded++;
        contended_record* rec = index < contended_shared::capacity ? &sh.records[index] : nullptr;
        if (rec) {
            *rec = {w, acquired, {}, {}};
        }
        timer.expires_after(hold);
        co_await timer.async_wait(asio::deferred);
        const auto leaving = clock::now();
        if (leaving >= g.until()) {
            ++sh.overran_validity;
        }
        --sh.holders;
        auto [rec_ec] = co_await g.async_release(asio::as_tuple(asio::deferred));
        if (rec) {
            rec->release_start = leaving;
            rec->release_done = clock::now();
        }
        if (rec_ec) {
            ++sh.release_errors;
            sh.note_error(rec_ec.message() + "\n" + g.last_report().to_string());
        }
    }
}

// Runs the workers as coroutines of this process: on one client, or on a client each.
void contend_in_process(const run_settings& rs, contended_shared& sh, int workers,
                        milliseconds hold, const redlock::options& opts, const std::string& key,
                        bool separate_clients, cpu_meter& cpu, clock::time_point& t0,
                        clock::time_point& t1)
{
    asio::io_context io;
    std::vector<redlock::client> clients;
    for (int i = 0; i < (separate_clients ? workers : 1); ++i) {
        clients.emplace_back(io.get_executor(), redlock::config::from_urls(rs.urls));
    }
    join_counter running(io);
    running.add(static_cast<std::size_t>(workers));
    for (int w = 0; w < workers; ++w) {
        auto& c = clients[separate_clients ? static_cast<std::size_t>(w) : 0];
        asio::co_spawn(
            io,
            [&sh, &running, w, m = c.make_mutex(key, opts), hold]() -> asio::awaitable<void> {
                co_await contended_worker(sh, w, m, hold);
                running.done();
            },
            rethrow);
    }
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await sleep_for(rs.warmup);
            t0 = clock::now();
            cpu.start();
            co_await sleep_for(rs.duration);
            t1 = clock::now();
            cpu.stop();
            sh.stop = true;
            co_await running.wait();
            for (auto& c : clients) {
                co_await shutdown(c);
            }
        },
        rethrow);
    io.run();
}

// Runs each worker in a process of its own (forked, with its own io_context and client), as
// separate services contending for one key would.
void contend_in_processes(const run_settings& rs, contended_shared& sh, int workers,
                          milliseconds hold, const redlock::options& opts, const std::string& key,
                          cpu_meter& cpu, clock::time_point& t0, clock::time_point& t1)
{
    const std::vector<pid_t> children = fork_workers(workers, [&](int w) {
        try {
            asio::io_context io;
            redlock::client c(io.get_executor(), redlock::config::from_urls(rs.urls));
            asio::co_spawn(
                io,
                [&]() -> asio::awaitable<void> {
                    co_await contended_worker(sh, w, c.make_mutex(key, opts), hold);
                    co_await shutdown(c);
                },
                rethrow);
            io.run();
            return 0;
        } catch (const std::exception& e) {
            sh.note_error(std::string("worker process: ") + e.what());
            return 1;
        }
    });
    const int fork_error = errno;
    if (static_cast<int>(children.size()) != workers) {
        sh.stop = true;
    }
    std::this_thread::sleep_for(rs.warmup);
    t0 = clock::now();
    cpu.start();
    std::this_thread::sleep_for(rs.duration);
    t1 = clock::now();
    cpu.stop();
    sh.stop = true;
    if (const int failed = wait_workers(children); failed > 0) {
        sh.note_error("a worker process failed");
        sh.acquire_errors += failed;
    }
    if (static_cast<int>(children.size()) != workers) {
        throw std::system_error(fork_error, std::generic_category(), "fork");
    }
}

}  // namespace

std::string_view to_string(contenders c)
{
    switch (c) {
        case contenders::shared_client:
            return "shared";
        case contenders::separate_clients:
            return "separate";
        case contenders::processes:
            return "processes";
    }
    return "?";
}

contended_outcome run_contended(const run_settings& rs, int workers, milliseconds hold,
                                retry_kind retry, contenders who, const server_bound& bound,
                                std::optional<std::size_t> stopped_node, bool fair)
{
    // Stopped for the whole run, warm-up included, and continued when this function ends.
    std::optional<stopped_process> silenced;
    if (stopped_node) {
        silenced.emplace(rs.server_pids.at(*stopped_node));
    }
    redlock::options opts;
    opts.tries = 1'000'000;  // a worker waits as long as it takes; the run's end stops it
    opts.fair = fair;
    std::string retry_name = "random 50-250 ms (library default)";
    if (retry == retry_kind::fast) {
        opts.retry_delay = [](int) {
            thread_local std::mt19937 engine{std::random_device{}()};
            return milliseconds(std::uniform_int_distribution<int>(1, 5)(engine));
        };
        retry_name = "random 1-5 ms";
    }
    const std::string retry_tag = retry == retry_kind::fast ? "fast" : "default";
    const std::string key = rs.key_prefix + ":c:" + retry_tag + ":" + std::string(to_string(who)) +
                            (stopped_node ? ":d" : "") + (fair ? ":fair" : "");
    const char* who_text = who == contenders::shared_client      ? "one shared client"
                           : who == contenders::separate_clients ? "a client per worker"
                                                                 : "a process per worker";

    shared_mapping<contended_shared> region;
    contended_shared& sh = *region;
    cpu_meter cpu(rs.server_pids);
    clock::time_point t0, t1;
    if (who == contenders::processes) {
        contend_in_processes(rs, sh, workers, hold, opts, key, cpu, t0, t1);
    } else {
        contend_in_process(rs, sh, workers, hold, opts, key, who == contenders::separate_clients,
                           cpu, t0, t1);
    }
    const std::span<const contended_record> records(
        sh.records, std::min(sh.recorded.load(), contended_shared::capacity));
    const std::string first_error = sh.error_noted ? std::string(sh.first_error) : std::string();

    // Figures over the acquisitions made inside the window.
    const double secs = seconds(t1 - t0);
    std::vector<std::int64_t> per_worker(static_cast<std::size_t>(workers), 0);
    std::int64_t acquisitions = 0;
    std::int64_t handoffs = 0;
    samples gap_done;   // previous holder's release completed -> this acquire completed
    samples gap_start;  // previous holder left the critical section -> this acquire completed
    samples handoff_gap_done;  // the same, for acquisitions by another worker only
    samples handoff_gap_start;
    samples held_for;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const contended_record& r = records[i];
        if (r.acquired < t0 || r.acquired >= t1) {
            continue;
        }
        ++acquisitions;
        ++per_worker[static_cast<std::size_t>(r.worker)];
        held_for.add(r.release_start - r.acquired);
        if (i > 0) {
            const contended_record& prev = records[i - 1];
            gap_done.add(r.acquired - prev.release_done);
            gap_start.add(r.acquired - prev.release_start);
            if (prev.worker != r.worker) {
                ++handoffs;
                handoff_gap_done.add(r.acquired - prev.release_done);
                handoff_gap_start.add(r.acquired - prev.release_start);
            }
        }
    }
    const double rate = static_cast<double>(acquisitions) / secs;
    const double handoff_rate = static_cast<double>(handoffs) / secs;
    const double ceiling = held_for.empty() ? 0.0 : 1e6 / held_for.mean_us();
    const auto [min_it, max_it] = std::minmax_element(per_worker.begin(), per_worker.end());
    // Fairness: the least served worker's share against an even share (1 = perfectly even).
    const double mean_per_worker = static_cast<double>(acquisitions) / workers;
    const double fairness = ratio(static_cast<double>(*min_it), mean_per_worker);
    // The longest stretch in which one worker (with a client per worker: one client) took
    // the lock again and again while the others waited, from its first acquisition to leaving
    // the last critical section of the stretch.
    std::int64_t run_length = 0, longest_run = 0;
    clock::time_point run_began{};
    clock::duration longest_run_time{};
    const contended_record* last = nullptr;
    for (const contended_record& r : records) {
        if (r.acquired < t0 || r.acquired >= t1) {
            continue;
        }
        if (!last || last->worker != r.worker) {
            run_length = 0;
            run_began = r.acquired;
        }
        ++run_length;
        longest_run = std::max(longest_run, run_length);
        longest_run_time = std::max(longest_run_time, r.release_start - run_began);
        last = &r;
    }
    const double longest_run_ms =
        std::chrono::duration<double, std::milli>(longest_run_time).count();
    say(
        strf("contended %d workers%s%s, hold %lld ms, retry %s, %s: %s acquisitions/s (%s of the "
             "hold's ceiling %s/s), %.1f handoffs/s; gap after release done mean %.0f us p50 %.0f "
             "us (after release start: mean %.0f p50 %.0f us = %s node round trips), at handoffs "
             "p50 %.0f us (after release start %.0f us = %s quorum rounds, %s after idle); per "
             "worker min %lld max %lld (min / mean %s), longest run by one worker %lld "
             "acquisitions in %.1f ms; acquire errors %lld; mutual-exclusion violations %lld",
             workers, fair ? ", fair lock" : "",
             stopped_node ? strf(", node %zu stopped", *stopped_node).c_str() : "",
             static_cast<long long>(hold.count()), retry_name.c_str(), who_text,
             grouped(rate).c_str(), ratio_text(ratio(rate, ceiling)).c_str(),
             grouped(ceiling).c_str(), handoff_rate, gap_done.mean_us(), gap_done.percentile_us(50),
             gap_start.mean_us(), gap_start.percentile_us(50),
             ratio_text(ratio(gap_start.percentile_us(50), bound.node_set_p50_us)).c_str(),
             handoff_gap_done.percentile_us(50), handoff_gap_start.percentile_us(50),
             ratio_text(ratio(handoff_gap_start.percentile_us(50), bound.round_set_quorum_p50_us))
                 .c_str(),
             ratio_text(ratio(handoff_gap_start.percentile_us(50),
                              bound.round_set_quorum_after_idle_p50_us))
                 .c_str(),
             static_cast<long long>(*min_it), static_cast<long long>(*max_it),
             strf("%.2f", fairness).c_str(), static_cast<long long>(longest_run), longest_run_ms,
             static_cast<long long>(sh.acquire_errors.load()),
             static_cast<long long>(sh.violations.load())));
    if (!first_error.empty()) {
        say("first error: " + first_error);
    }
    if (sh.violations != 0) {
        note_failure("MUTUAL EXCLUSION VIOLATED: two workers were in the critical section at once");
    }
    if (sh.acquire_errors + sh.release_errors > 0) {
        note_failure(strf("contended: %lld acquire and %lld release errors",
                          static_cast<long long>(sh.acquire_errors.load()),
                          static_cast<long long>(sh.release_errors.load())));
    }
    result(json()
               .add("scenario", "contended")
               .add("workers", workers)
               .add("stopped_nodes", stopped_node ? 1 : 0)
               .add("hold_ms", hold.count())
               .add("retry", retry_tag)
               .add("retry_delay", retry_name)
               .add("clients", to_string(who))
               .add("fair", fair)
               .add("nodes", rs.urls.size())
               .add("duration_s", secs)
               .add("acquisitions", acquisitions)
               .add("acquisitions_per_s", rate)
               .add("hold_us", latency_json(held_for))
               .add("hold_ceiling_per_s", ceiling)
               .add("vs_hold_ceiling", ratio(rate, ceiling))
               .add("handoffs", handoffs)
               .add("handoffs_per_s", handoff_rate)
               .add("gap_after_release_done_us", latency_json(gap_done))
               .add("gap_after_release_start_us", latency_json(gap_start))
               .add("gap_p50_in_node_round_trips",
                    ratio(gap_start.percentile_us(50), bound.node_set_p50_us))
               .add("handoff_gap_after_release_done_us", latency_json(handoff_gap_done))
               .add("handoff_gap_after_release_start_us", latency_json(handoff_gap_start))
               .add("handoff_gap_p50_in_node_round_trips",
                    ratio(handoff_gap_start.percentile_us(50), bound.node_set_p50_us))
               .add("handoff_gap_p50_in_quorum_rounds",
                    ratio(handoff_gap_start.percentile_us(50), bound.round_set_quorum_p50_us))
               .add("handoff_gap_p50_in_quorum_rounds_after_idle",
                    ratio(handoff_gap_start.percentile_us(50),
                          bound.round_set_quorum_after_idle_p50_us))
               .add("per_worker", per_worker)
               .add("per_worker_min", *min_it)
               .add("per_worker_max", *max_it)
               .add("per_worker_min_vs_mean", fairness)
               .add("longest_same_worker_run", longest_run)
               .add("longest_same_worker_run_ms", longest_run_ms)
               .add("acquire_errors", sh.acquire_errors.load())
               .add("release_errors", sh.release_errors.load())
               .add("overran_validity", sh.overran_validity.load())
               .add("violations", sh.violations.load())
               .add("client_cores", cpu.client_cores())
               .add("servers_cores", cpu.servers_cores()));
    return contended_outcome{sh.violations.load(), rate};
}

void run_degraded_contended(const run_settings& rs, int workers, milliseconds hold,
                            std::size_t stopped_node, const server_bound& bound)
{
    if (stopped_node >= rs.server_pids.size()) {
        say("degraded-contended: skipped, it needs the servers this program starts (not --nodes)");
        return;
    }
    const auto up =
        run_contended(rs, workers, hold, retry_kind::library_default, contenders::processes, bound);
    const auto down = run_contended(rs, workers, hold, retry_kind::library_default,
                                    contenders::processes, bound, stopped_node);
    const double kept = ratio(down.acquisitions_per_s, up.acquisitions_per_s);
    say(
        strf("degraded-contended %d workers (a process each), node %zu of %zu stopped: %s "
             "acquisitions/s against %s with all up (%s)",
             workers, stopped_node, rs.urls.size(), grouped(down.acquisitions_per_s).c_str(),
             grouped(up.acquisitions_per_s).c_str(), ratio_text(kept).c_str()));
    result(json()
               .add("scenario", "degraded_contended")
               .add("workers", workers)
               .add("hold_ms", hold.count())
               .add("nodes", rs.urls.size())
               .add("stopped_nodes", 1)
               .add("up_acquisitions_per_s", up.acquisitions_per_s)
               .add("acquisitions_per_s", down.acquisitions_per_s)
               .add("throughput_vs_up", kept));
}

// ---------------------------------------------------------------------------------------
// (c) held

void run_held(const run_settings& rs, int k, milliseconds expiry, bool watchdog)
{
    asio::io_context io;
    redlock::client client(io.get_executor(), redlock::config::from_urls(rs.urls));
    redlock::options opts;
    opts.expiry = expiry;
    opts.tries = 3;
    if (watchdog && !enable_auto_extend(opts)) {
        throw std::runtime_error("--watchdog: this version of the library has no watchdog");
    }
    const auto period = std::chrono::duration_cast<clock::duration>(expiry) / 3;
    // With the library's watchdog the hold must span a whole period: its extensions are due
    // one period after each acquisition. Our own extender spreads them evenly instead.
    const auto hold = watchdog ? std::max<clock::duration>(rs.duration, period + 1s) : rs.duration;
    constexpr int acquirers = 256;
    constexpr int extenders = 64;

    struct shared_state
    {
        std::size_t next = 0;
        std::int64_t acquire_errors = 0;
        std::int64_t extends = 0;
        std::int64_t extend_errors = 0;
        std::int64_t release_errors = 0;
        std::string first_error;
        samples extend_latency;
    } sh;
    const auto ku = static_cast<std::size_t>(k);
    std::vector<redlock::guard> guards;
    long rss_before = 0, rss_held = 0, rss_after_hold = 0;
    double acquire_s = 0, release_s = 0;
    std::int64_t still_owned = 0;
    cpu_meter cpu(rs.server_pids);
    clock::time_point hold_start, hold_end, hold_done;
    auto note_error = [&](const std::string& what) {
        if (sh.first_error.empty()) {
            sh.first_error = what;
        }
    };

    auto acquirer = [&](join_counter& j) -> asio::awaitable<void> {
        while (sh.next < ku) {
            const std::size_t i = sh.next++;
            auto m = client.make_mutex(rs.key_prefix + ":h:" + std::to_string(i), opts);
            auto [ec, g] = co_await m.async_acquire(asio::as_tuple(asio::deferred));
            if (ec) {
                ++sh.acquire_errors;
                note_error(ec.message() + "\n" + g.last_report().to_string());
            } else {
                guards[i] = std::move(g);
            }
        }
        j.done();
    };
    // Extends guard i at hold_start + period * (i / k + n) for n = 0, 1, ...: the steady
    // rate of k / period extensions, spread evenly from the first instant of the hold.
    auto extender = [&](std::size_t first, join_counter& j) -> asio::awaitable<void> {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        for (std::int64_t round = 0;; ++round) {
            for (std::size_t i = first; i < ku; i += extenders) {
                const auto due = hold_start + period * round +
                                 clock::duration(period.count() * static_cast<std::int64_t>(i) /
                                                 static_cast<std::int64_t>(k));
                if (due >= hold_end) {
                    j.done();
                    co_return;
                }
                timer.expires_at(due);
                co_await timer.async_wait(asio::as_tuple(asio::deferred));
                if (!guards[i].owns_lock()) {
                    continue;
                }
                const auto t = clock::now();
                auto [ec] = co_await guards[i].async_extend(asio::as_tuple(asio::deferred));
                sh.extend_latency.add(clock::now() - t);
                if (ec) {
                    ++sh.extend_errors;
                    note_error("extend: " + ec.message());
                } else {
                    ++sh.extends;
                }
            }
        }
    };
    auto releaser = [&](join_counter& j) -> asio::awaitable<void> {
        while (sh.next < ku) {
            const std::size_t i = sh.next++;
            if (guards[i].owns_lock()) {
                auto [ec] = co_await guards[i].async_release(asio::as_tuple(asio::deferred));
                if (ec) {
                    ++sh.release_errors;
                    note_error("release: " + ec.message());
                }
            }
        }
        j.done();
    };

    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            {
                // Opens the connections, so that the baseline includes them.
                auto warm = client.make_mutex(rs.key_prefix + ":h:warm-up", opts);
                auto g = co_await warm.acquire();
                co_await g.release();
            }
            rss_before = rss_kib();
            guards.resize(ku);

            auto start = clock::now();
            {
                join_counter j(io);
                j.add(acquirers);
                for (int a = 0; a < acquirers; ++a) {
                    asio::co_spawn(io, acquirer(j), rethrow);
                }
                co_await j.wait();
            }
            acquire_s = seconds(clock::now() - start);
            rss_held = rss_kib();

            hold_start = clock::now();
            hold_end = hold_start + hold;
            cpu.start();
            if (watchdog) {
                // The watchdog's extensions show as guards whose validity moved.
                std::vector<clock::time_point> until_before(ku);
                for (std::size_t i = 0; i < ku; ++i) {
                    until_before[i] = guards[i].until();
                }
                co_await sleep_until(hold_end);
                for (std::size_t i = 0; i < ku; ++i) {
                    if (guards[i].owns_lock() && guards[i].until() > until_before[i]) {
                        ++sh.extends;
                    }
                }
            } else {
                join_counter j(io);
                j.add(extenders);
                for (std::size_t e = 0; e < static_cast<std::size_t>(extenders); ++e) {
                    asio::co_spawn(io, extender(e, j), rethrow);
                }
                co_await j.wait();
            }
            hold_done = clock::now();
            cpu.stop();
            rss_after_hold = rss_kib();
            const auto now = clock::now();
            for (const auto& g : guards) {
                if (g.owns_lock() && g.until() > now) {
                    ++still_owned;
                }
            }

            start = clock::now();
            sh.next = 0;
            {
                join_counter j(io);
                j.add(acquirers);
                for (int a = 0; a < acquirers; ++a) {
                    asio::co_spawn(io, releaser(j), rethrow);
                }
                co_await j.wait();
            }
            release_s = seconds(clock::now() - start);
            guards.clear();
            co_await shutdown(client);
        },
        rethrow);
    io.run();

    const double held_bytes = static_cast<double>(rss_held - rss_before) * 1024.0;
    const double per_guard = held_bytes / static_cast<double>(k);
    const double hold_s = seconds(hold_done - hold_start);
    const double extend_rate = static_cast<double>(sh.extends) / hold_s;
    const double cpu_per_extend_us =
        sh.extends > 0 ? cpu.client_cores() * hold_s * 1e6 / static_cast<double>(sh.extends) : 0.0;
    say(
        strf("held K=%d, expiry %lld s, %s: acquired in %.2f s (%s/s, %lld failed), client RSS "
             "+%s KiB = %.0f bytes per guard; hold %.1f s: %s extensions (%s/s, %lld failed, p50 "
             "%.0f us), client %.3f cores (%.1f us CPU per extension), servers %s cores, RSS "
             "then +%s KiB; %lld of %d still owned and valid; released in %.2f s (%lld failed)",
             k, static_cast<long long>(expiry.count() / 1000),
             watchdog ? "library watchdog" : "extended by the benchmark every expiry/3", acquire_s,
             grouped(k / acquire_s).c_str(), static_cast<long long>(sh.acquire_errors),
             grouped(static_cast<double>(rss_held - rss_before)).c_str(), per_guard, hold_s,
             grouped(static_cast<double>(sh.extends)).c_str(), grouped(extend_rate).c_str(),
             static_cast<long long>(sh.extend_errors), sh.extend_latency.percentile_us(50),
             cpu.client_cores(), cpu_per_extend_us, cores_text(cpu.servers_cores()).c_str(),
             grouped(static_cast<double>(rss_after_hold - rss_before)).c_str(),
             static_cast<long long>(still_owned), k, release_s,
             static_cast<long long>(sh.release_errors)));
    if (!sh.first_error.empty()) {
        say("first error: " + sh.first_error);
    }
    if (sh.acquire_errors + sh.extend_errors + sh.release_errors > 0 || still_owned != k) {
        note_failure(strf(
            "held: %lld acquire, %lld extend and %lld release errors, %lld of %d "
            "still owned",
            static_cast<long long>(sh.acquire_errors), static_cast<long long>(sh.extend_errors),
            static_cast<long long>(sh.release_errors), static_cast<long long>(still_owned), k));
    }
    result(json()
               .add("scenario", "held")
               .add("k", k)
               .add("expiry_ms", expiry.count())
               .add("extended_by", watchdog ? "watchdog" : "benchmark")
               .add("nodes", rs.urls.size())
               .add("acquire_s", acquire_s)
               .add("acquire_per_s", k / acquire_s)
               .add("acquire_errors", sh.acquire_errors)
               .add("rss_before_kib", rss_before)
               .add("rss_held_kib", rss_held)
               .add("bytes_per_guard", per_guard)
               .add("hold_s", hold_s)
               .add("extends", sh.extends)
               .add("extends_per_s", extend_rate)
               .add("extend_errors", sh.extend_errors)
               .add("extend_us", latency_json(sh.extend_latency))
               .add("client_cores", cpu.client_cores())
               .add("cpu_us_per_extend", cpu_per_extend_us)
               .add("servers_cores", cpu.servers_cores())
               .add("rss_after_hold_kib", rss_after_hold)
               .add("still_owned", still_owned)
               .add("release_s", release_s)
               .add("release_errors", sh.release_errors));
}

// ---------------------------------------------------------------------------------------
// (f) cluster

void run_cluster(const run_settings& rs, const std::vector<int>& masters, int concurrency,
                 const std::vector<int>& depths)
{
    for (int m : masters) {
        local_cluster cluster(m);
        run_settings crs = rs;
        crs.urls = {cluster.url()};
        crs.server_pids.clear();
        for (pid_t p : cluster.pids()) {
            crs.server_pids.push_back(static_cast<int>(p));
        }
        const std::string tag = "cl" + std::to_string(m);

        // The bound: every master driven directly, on keys of its own slots.
        const int deepest = *std::max_element(depths.begin(), depths.end());
        std::vector<std::vector<std::string>> keys;
        for (std::size_t i = 0; i < cluster.masters(); ++i) {
            keys.push_back(cluster.keys_owned_by(
                i, static_cast<std::size_t>(std::max(deepest / 2, 1)),
                rs.key_prefix + ":" + tag + ":raw:" + std::to_string(i) + ":"));
        }
        std::optional<raw_throughput_figures> bound;
        json by_depth;  // cycles/s at each depth
        for (int depth : depths) {
            auto b = raw_throughput_on_keys(cluster.master_urls(), keys, depth, rs.warmup,
                                            rs.duration, crs.server_pids);
            say(
                strf("cluster %d master(s), raw bound at depth %d, one connection per master: "
                     "%s commands/s = %s cycles/s, batch p50 %.0f us; client %.2f cores, "
                     "servers %s cores, rest of the machine %s cores%s",
                     m, depth, grouped(b.commands_per_s).c_str(), grouped(b.cycles_per_s).c_str(),
                     b.batch_latency.percentile_us(50), b.client_cores,
                     cores_text(b.servers_cores).c_str(), cores_text(b.others_cores).c_str(),
                     b.replies_as_expected ? "" : "; WARNING: unexpected replies"));
            if (!b.replies_as_expected) {
                note_failure(
                    strf("cluster %d master(s): the raw sender got replies other than "
                         "OK and 1, first: %s",
                         m, b.first_unexpected.c_str()));
            }
            by_depth.add(std::to_string(depth), b.cycles_per_s);
            if (!bound || b.cycles_per_s > bound->cycles_per_s) {
                bound = std::move(b);
            }
        }

        // The library, the cluster as its one node.
        auto f = measure_uncontended(crs, concurrency, tag + ":u" + std::to_string(concurrency));
        const double rate = f.rate();
        const double vs_bound = ratio(rate, bound->cycles_per_s);
        // CPU per lock cycle: what the projection to more machines is made of.
        const double client_us = ratio(f.client_cores * 1e6, rate);
        const double servers_us = f.servers_cores < 0 ? -1 : ratio(f.servers_cores * 1e6, rate);
        const double bound_client_us = ratio(bound->client_cores * 1e6, bound->cycles_per_s);
        const double bound_servers_us =
            bound->servers_cores < 0 ? -1 : ratio(bound->servers_cores * 1e6, bound->cycles_per_s);
        say(
            strf("cluster %d master(s), C=%d: %s cycles/s (%s of the raw bound of the same "
                 "cluster, %s cycles/s at depth %d), acquire p50 %.0f us p99 %.0f us, release "
                 "p50 %.0f us; errors %lld/%lld; client %.2f cores (%.1f us per cycle), servers "
                 "%s cores (%.1f us per cycle), rest of the machine %s cores",
                 m, concurrency, grouped(rate).c_str(), ratio_text(vs_bound).c_str(),
                 grouped(bound->cycles_per_s).c_str(), bound->depth, f.acquire.percentile_us(50),
                 f.acquire.percentile_us(99), f.release.percentile_us(50),
                 static_cast<long long>(f.acquire_errors), static_cast<long long>(f.release_errors),
                 f.client_cores, client_us, cores_text(f.servers_cores).c_str(), servers_us,
                 cores_text(f.others_cores).c_str()));
        if (!f.first_error.empty()) {
            say("first error: " + f.first_error);
        }
        if (f.acquire_errors + f.release_errors > 0) {
            note_failure(strf("cluster %d master(s), C=%d: %lld acquire and %lld release errors", m,
                              concurrency, static_cast<long long>(f.acquire_errors),
                              static_cast<long long>(f.release_errors)));
        }
        result(add_figures(json()
                               .add("scenario", "cluster")
                               .add("masters", m)
                               .add("concurrency", concurrency)
                               .add("nodes", crs.urls.size()),
                           f)
                   .add("client_cpu_us_per_cycle", client_us)
                   .add("servers_cpu_us_per_cycle", servers_us)
                   .add("others_cores", f.others_cores)
                   .add("vs_bound", vs_bound)
                   .add("bound", json()
                                     .add("depth", bound->depth)
                                     .add("connections_per_master", 1)
                                     .add("duration_s", bound->seconds)
                                     .add("commands_per_s", bound->commands_per_s)
                                     .add("cycles_per_s", bound->cycles_per_s)
                                     .add("batch_us", latency_json(bound->batch_latency))
                                     .add("client_cores", bound->client_cores)
                                     .add("servers_cores", bound->servers_cores)
                                     .add("client_cpu_us_per_cycle", bound_client_us)
                                     .add("servers_cpu_us_per_cycle", bound_servers_us)
                                     .add("others_cores", bound->others_cores)
                                     .add("replies_as_expected", bound->replies_as_expected))
                   .add("bound_cycles_per_s_by_depth", by_depth));
    }
}

}  // namespace bench
