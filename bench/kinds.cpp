// SPDX-License-Identifier: BSL-1.0
// The scenarios of the lock kinds beside the plain mutex: a read-write lock read by many and
// written by one, a semaphore of several permits, and the fair lock against the unfair one.
// Their workers loop as those of (b) contended do: acquire, hold, release, acquire again.

#include "scenarios.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <tuple>
#include <utility>

namespace bench {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using acquired_lock = std::tuple<boost::system::error_code, redlock::guard>;

// One acquisition, as its worker saw it.
struct hold_record
{
    int worker = 0;
    bool exclusive = false;
    /// The worker called acquire.
    clock::time_point began;
    /// The acquire completed with the lock.
    clock::time_point acquired;
    /// The worker left its critical section (its release begins).
    clock::time_point left;
};

// How one worker takes the lock, and whether it holds it alone (a writer, a mutex's owner)
// or beside others (a reader, a semaphore's permit holder).
struct worker_spec
{
    std::function<asio::awaitable<acquired_lock>()> acquire;
    bool exclusive = false;
};

// What the workers of one measurement share; one thread runs them all.
struct kind_run
{
    /// How many non-exclusive holders may be in at once.
    std::size_t shared_limit = std::numeric_limits<std::size_t>::max();
    bool stop = false;
    std::size_t shared_in = 0;
    std::size_t exclusive_in = 0;
    std::int64_t violations = 0;
    std::int64_t errors = 0;
    std::string first_error;
    std::vector<hold_record> records;
    clock::time_point t0, t1;
    double client_cores = 0;
    double servers_cores = 0;

    void note_error(const std::string& what)
    {
        if (errors++ == 0) {
            first_error = what;
        }
    }
    // Whoever is in now may be in together.
    bool admissible() const
    {
        return exclusive_in == 0 ? shared_in <= shared_limit : exclusive_in == 1 && shared_in == 0;
    }
    // The acquisitions made inside the measured window.
    std::vector<hold_record> measured() const
    {
        std::vector<hold_record> in;
        std::copy_if(records.begin(), records.end(), std::back_inserter(in),
                     [this](const hold_record& r) { return r.acquired >= t0 && r.acquired < t1; });
        return in;
    }
    double seconds() const { return bench::seconds(t1 - t0); }
};

asio::awaitable<void> kind_worker(kind_run& run, int w, worker_spec spec, milliseconds hold)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!run.stop) {
        const auto began = clock::now();
        auto [ec, g] = co_await spec.acquire();
        const auto acquired = clock::now();
        if (ec) {
            run.note_error(ec.message() + "\n" + g.last_report().to_string());
            timer.expires_after(std::chrono::milliseconds(10));  // not a busy loop on errors
            co_await timer.async_wait(asio::deferred);
            continue;
        }
        std::size_t& in = spec.exclusive ? run.exclusive_in : run.shared_in;
        ++in;
        if (!run.admissible()) {
            ++run.violations;
        }
        timer.expires_after(hold);
        co_await timer.async_wait(asio::deferred);
        const auto left = clock::now();
        --in;
        run.records.push_back({w, spec.exclusive, began, acquired, left});
        auto [release_ec] = co_await g.async_release(asio::as_tuple(asio::deferred));
        if (release_ec) {
            run.note_error(release_ec.message() + "\n" + g.last_report().to_string());
        }
    }
}

void rethrow(const std::exception_ptr& e)
{
    if (e) {
        std::rethrow_exception(e);
    }
}

asio::awaitable<void> sleep_for(clock::duration d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::deferred);
}

// Makes the workers of a measurement from its clients.
using worker_factory = std::function<std::vector<worker_spec>(std::vector<redlock::client>&)>;

// Runs the workers `make` gives on `clients` clients of one io_context for the warm-up and
// the measured window, then lets every worker finish its acquisition and stop.
void measure(const run_settings& rs, kind_run& run, std::size_t clients, milliseconds hold,
             const worker_factory& make)
{
    asio::io_context io;
    std::vector<redlock::client> cs;
    for (std::size_t i = 0; i < clients; ++i) {
        cs.emplace_back(io.get_executor(), redlock::config::from_urls(rs.urls));
    }
    std::vector<worker_spec> specs = make(cs);
    std::size_t running = specs.size();
    asio::steady_timer all_done(io, clock::time_point::max());
    for (std::size_t w = 0; w < specs.size(); ++w) {
        asio::co_spawn(
            io,
            [&, w, spec = std::move(specs[w])]() -> asio::awaitable<void> {
                co_await kind_worker(run, static_cast<int>(w), spec, hold);
                if (--running == 0) {
                    all_done.cancel();
                }
            },
            rethrow);
    }
    cpu_meter cpu(rs.server_pids);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await sleep_for(rs.warmup);
            run.t0 = clock::now();
            cpu.start();
            co_await sleep_for(rs.duration);
            run.t1 = clock::now();
            cpu.stop();
            run.stop = true;
            while (running > 0) {
                co_await all_done.async_wait(asio::as_tuple(asio::deferred));
            }
            for (auto& c : cs) {
                co_await c.async_shutdown(asio::as_tuple(asio::deferred));
            }
        },
        rethrow);
    io.run();
    run.client_cores = cpu.client_cores();
    run.servers_cores = cpu.servers_cores();
}

redlock::options waiting_options()
{
    redlock::options o;
    o.tries = 1'000'000;  // a worker waits as long as it takes; the run's end stops it
    return o;
}

// The mean time a holder spent in its critical section, and the rate of exclusive holds it
// allows: the plain mutex's ceiling.
double mean_hold_us(const std::vector<hold_record>& records)
{
    samples held;
    for (const hold_record& r : records) {
        held.add(r.left - r.acquired);
    }
    return held.mean_us();
}

// Errors and violations make the run's figures suspect: the program fails.
void check(const kind_run& run, const std::string& scenario)
{
    if (!run.first_error.empty()) {
        say("first error: " + run.first_error);
    }
    if (run.violations > 0) {
        note_failure(scenario + ": " + std::to_string(run.violations) +
                     " acquisitions found holders that the lock must not admit together");
    }
    if (run.errors > 0) {
        note_failure(scenario + ": " + std::to_string(run.errors) + " acquire or release errors");
    }
}

// How many of `records` (whose worker, acquired) each worker made.
std::vector<std::int64_t> per_worker(const std::vector<hold_record>& records, int workers)
{
    std::vector<std::int64_t> counts(static_cast<std::size_t>(workers), 0);
    for (const hold_record& r : records) {
        ++counts[static_cast<std::size_t>(r.worker)];
    }
    return counts;
}

// The least served worker's acquisitions as a fraction of the mean (1: an even share).
double least_share(const std::vector<std::int64_t>& counts, std::size_t total)
{
    const double mean = static_cast<double>(total) / static_cast<double>(counts.size());
    return ratio(static_cast<double>(*std::min_element(counts.begin(), counts.end())), mean);
}

// Overtakings among `records`: pairs of acquisitions (x, y) by different workers where y's
// acquire began after x's (x was waiting then: it began and had not got the lock yet) and y
// got the lock before x. Every acquire that begins while another waits adds one for each
// waiter it passes. A worker makes one acquire at a time, so a waiter is passed at most once
// by each acquisition of the others.
std::int64_t overtakings(std::vector<hold_record> records)
{
    std::sort(records.begin(), records.end(),
              [](const hold_record& a, const hold_record& b) { return a.began < b.began; });
    std::int64_t passed = 0;
    for (std::size_t y = 0; y < records.size(); ++y) {
        for (std::size_t x = 0; x < y; ++x) {
            if (records[x].worker != records[y].worker && records[x].began < records[y].began &&
                records[y].acquired < records[x].acquired) {
                ++passed;
            }
        }
    }
    return passed;
}

}  // namespace

void run_rw(const run_settings& rs, int readers, int writers, milliseconds hold)
{
    kind_run run;
    measure(rs, run, 1, hold, [&](std::vector<redlock::client>& cs) {
        auto m = cs.front().make_rw_mutex(rs.key_prefix + ":rw", waiting_options());
        std::vector<worker_spec> specs;
        for (int i = 0; i < readers + writers; ++i) {
            const bool writer = i >= readers;
            specs.push_back({[m, writer]() mutable -> asio::awaitable<acquired_lock> {
                                 auto token = asio::as_tuple(asio::deferred);
                                 if (writer) {
                                     co_return co_await m.async_acquire(token);
                                 }
                                 co_return co_await m.async_acquire_shared(token);
                             },
                             writer});
        }
        return specs;
    });
    const std::vector<hold_record> in = run.measured();
    const auto writes =
        std::count_if(in.begin(), in.end(), [](const hold_record& r) { return r.exclusive; });
    const auto reads = static_cast<std::int64_t>(in.size()) - writes;
    const double secs = run.seconds();
    const double rate = static_cast<double>(in.size()) / secs;
    const double held_us = mean_hold_us(in);
    const double ceiling = held_us > 0 ? 1e6 / held_us : 0.0;
    say(
        strf("rw %d readers : %d writer(s), hold %lld ms, one client: %s acquisitions/s (reads "
             "%s/s, writes %s/s) = %.2f x the plain mutex's ceiling %s/s (1 / mean hold %.0f "
             "us); errors %lld; violations %lld",
             readers, writers, static_cast<long long>(hold.count()), grouped(rate).c_str(),
             grouped(static_cast<double>(reads) / secs).c_str(),
             grouped(static_cast<double>(writes) / secs).c_str(), ratio(rate, ceiling),
             grouped(ceiling).c_str(), held_us, static_cast<long long>(run.errors),
             static_cast<long long>(run.violations)));
    check(run, "rw");
    result(json()
               .add("scenario", "rw")
               .add("readers", readers)
               .add("writers", writers)
               .add("hold_ms", hold.count())
               .add("clients", "shared")
               .add("nodes", rs.urls.size())
               .add("duration_s", secs)
               .add("acquisitions_per_s", rate)
               .add("reads_per_s", static_cast<double>(reads) / secs)
               .add("writes_per_s", static_cast<double>(writes) / secs)
               .add("mean_hold_us", held_us)
               .add("mutex_ceiling_per_s", ceiling)
               .add("vs_mutex_ceiling", ratio(rate, ceiling))
               .add("errors", run.errors)
               .add("violations", run.violations)
               .add("client_cores", run.client_cores)
               .add("servers_cores", run.servers_cores));
}

void run_semaphore(const run_settings& rs, int permits, int workers, milliseconds hold)
{
    kind_run run;
    run.shared_limit = static_cast<std::size_t>(permits);
    measure(rs, run, 1, hold, [&](std::vector<redlock::client>& cs) {
        auto s = cs.front().make_semaphore(rs.key_prefix + ":sem", permits, waiting_options());
        std::vector<worker_spec> specs;
        for (int i = 0; i < workers; ++i) {
            specs.push_back({[s]() mutable -> asio::awaitable<acquired_lock> {
                                 co_return co_await s.async_acquire(asio::as_tuple(asio::deferred));
                             },
                             false});
        }
        return specs;
    });
    const std::vector<hold_record> in = run.measured();
    const double secs = run.seconds();
    const double rate = static_cast<double>(in.size()) / secs;
    // Permits in use on average: the time each holder spent inside the window, summed, over
    // the window's length.
    clock::duration inside{};
    for (const hold_record& r : run.records) {
        const auto from = std::max(r.acquired, run.t0);
        const auto to = std::min(r.left, run.t1);
        inside += std::max(to - from, clock::duration::zero());
    }
    const double in_use = bench::seconds(inside) / secs;
    const double held_us = mean_hold_us(in);
    const double ceiling = held_us > 0 ? permits * 1e6 / held_us : 0.0;
    say(
        strf("semaphore %d permits, %d workers, hold %lld ms, one client: %s acquisitions/s "
             "(%.2f of the ceiling %s/s, permits / mean hold %.0f us); permits in use on average "
             "%.2f of %d; errors %lld; violations %lld",
             permits, workers, static_cast<long long>(hold.count()), grouped(rate).c_str(),
             ratio(rate, ceiling), grouped(ceiling).c_str(), held_us, in_use, permits,
             static_cast<long long>(run.errors), static_cast<long long>(run.violations)));
    check(run, "semaphore");
    result(json()
               .add("scenario", "semaphore")
               .add("permits", permits)
               .add("workers", workers)
               .add("hold_ms", hold.count())
               .add("clients", "shared")
               .add("nodes", rs.urls.size())
               .add("duration_s", secs)
               .add("acquisitions_per_s", rate)
               .add("mean_hold_us", held_us)
               .add("ceiling_per_s", ceiling)
               .add("vs_ceiling", ratio(rate, ceiling))
               .add("permits_in_use", in_use)
               .add("permits_in_use_share", in_use / permits)
               .add("errors", run.errors)
               .add("violations", run.violations)
               .add("client_cores", run.client_cores)
               .add("servers_cores", run.servers_cores));
}

namespace {

// `workers` workers, a client each, on one mutex made with `fair`.
kind_run measure_mutex(const run_settings& rs, int workers, milliseconds hold, bool fair)
{
    kind_run run;
    run.shared_limit = 0;
    measure(rs, run, static_cast<std::size_t>(workers), hold,
            [&](std::vector<redlock::client>& cs) {
                redlock::options o = waiting_options();
                o.fair = fair;
                std::vector<worker_spec> specs;
                for (auto& c : cs) {
                    auto m = c.make_mutex(rs.key_prefix + (fair ? ":fair" : ":unfair"), o);
                    specs.push_back({[m]() mutable -> asio::awaitable<acquired_lock> {
                                         co_return co_await m.async_acquire(
                                             asio::as_tuple(asio::deferred));
                                     },
                                     true});
                }
                return specs;
            });
    return run;
}

}  // namespace

void run_fair(const run_settings& rs, int workers, milliseconds hold)
{
    kind_run unfair = measure_mutex(rs, workers, hold, false);
    kind_run fair = measure_mutex(rs, workers, hold, true);
    const std::vector<hold_record> in = fair.measured();
    const std::vector<hold_record> unfair_in = unfair.measured();
    const double rate = static_cast<double>(in.size()) / fair.seconds();
    const double unfair_rate = static_cast<double>(unfair_in.size()) / unfair.seconds();
    const std::vector<std::int64_t> counts = per_worker(in, workers);
    const double share = least_share(counts, in.size());
    const double unfair_share = least_share(per_worker(unfair_in, workers), unfair_in.size());
    const std::int64_t passed = overtakings(in);
    const std::int64_t unfair_passed = overtakings(unfair_in);
    const double held_us = mean_hold_us(in);
    const double ceiling = held_us > 0 ? 1e6 / held_us : 0.0;
    say(
        strf("fair %d workers, a client each, hold %lld ms: %s acquisitions/s = %.2f of the "
             "hold's ceiling %s/s (1 / mean hold %.0f us), %.2f of the unfair lock's %s/s; least "
             "worker's share of the mean %.2f (unfair %.2f); overtakings %lld in %zu "
             "acquisitions (unfair %lld in %zu); errors %lld; violations %lld",
             workers, static_cast<long long>(hold.count()), grouped(rate).c_str(),
             ratio(rate, ceiling), grouped(ceiling).c_str(), held_us, ratio(rate, unfair_rate),
             grouped(unfair_rate).c_str(), share, unfair_share, static_cast<long long>(passed),
             in.size(), static_cast<long long>(unfair_passed), unfair_in.size(),
             static_cast<long long>(fair.errors + unfair.errors),
             static_cast<long long>(fair.violations + unfair.violations)));
    check(unfair, "fair (the unfair lock)");
    check(fair, "fair");
    result(json()
               .add("scenario", "fair")
               .add("workers", workers)
               .add("hold_ms", hold.count())
               .add("clients", "separate")
               .add("nodes", rs.urls.size())
               .add("duration_s", fair.seconds())
               .add("acquisitions", static_cast<std::int64_t>(in.size()))
               .add("acquisitions_per_s", rate)
               .add("unfair_acquisitions_per_s", unfair_rate)
               .add("vs_unfair", ratio(rate, unfair_rate))
               .add("hold_ceiling_per_s", ceiling)
               .add("vs_hold_ceiling", ratio(rate, ceiling))
               .add("per_worker", counts)
               .add("per_worker_min_vs_mean", share)
               .add("unfair_per_worker_min_vs_mean", unfair_share)
               .add("overtakings", passed)
               .add("unfair_overtakings", unfair_passed)
               .add("errors", fair.errors + unfair.errors)
               .add("violations", fair.violations + unfair.violations)
               .add("client_cores", fair.client_cores)
               .add("servers_cores", fair.servers_cores));
}

}  // namespace bench
