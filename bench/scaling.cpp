// SPDX-License-Identifier: BSL-1.0
// Scenario scaling: what a grant costs the servers as more processes contend for one lock, for
// each lock kind. The servers' own counters (INFO stats, cpu and commandstats, over plain
// connections of this process) are read just before and just after the measured window, and
// their differences divided by the grants made in it; no CONFIG RESETSTAT is needed. Both
// total_commands_processed and commandstats count the commands a script runs (redis.call) as
// well as the EVALSHA that ran it, and an EVALSHA's usec includes theirs.

#include "processes.hpp"
#include "scenarios.hpp"

#include "common/redis_server.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#ifndef REDLOCK_BENCH_SOURCE_DIR
#define REDLOCK_BENCH_SOURCE_DIR "bench"
#endif

namespace bench {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using acquired_lock = std::tuple<boost::system::error_code, redlock::guard>;

// ---------------------------------------------------------------------------------------
// The servers' counters

struct command_cost
{
    double calls = 0;
    double usec = 0;
};

// What INFO tells of one server, or of several summed.
struct server_counters
{
    double commands = 0;                             // total_commands_processed
    double cpu_s = 0;                                // used_cpu_sys + used_cpu_user
    std::map<std::string, command_cost> by_command;  // commandstats, by command name

    server_counters& operator+=(const server_counters& o)
    {
        commands += o.commands;
        cpu_s += o.cpu_s;
        for (const auto& [name, c] : o.by_command) {
            by_command[name].calls += c.calls;
            by_command[name].usec += c.usec;
        }
        return *this;
    }
};

// `after` - `before`, leaving out the INFO calls of the reading itself (one per server in the
// difference: a command counts once it has run, so each read counts the previous one).
server_counters difference(const server_counters& after, const server_counters& before)
{
    server_counters d;
    d.commands = after.commands - before.commands;
    d.cpu_s = after.cpu_s - before.cpu_s;
    for (const auto& [name, c] : after.by_command) {
        command_cost was;
        if (auto it = before.by_command.find(name); it != before.by_command.end()) {
            was = it->second;
        }
        const command_cost delta{c.calls - was.calls, c.usec - was.usec};
        if (name == "info") {
            d.commands -= delta.calls;
        } else if (delta.calls > 0) {
            d.by_command[name] = delta;
        }
    }
    return d;
}

double number_in(std::string_view text)
{
    double v = 0;
    std::from_chars(text.data(), text.data() + text.size(), v);
    return v;
}

// The fields of one INFO reply ("name:value" lines) that the figures use.
server_counters parse_info(std::string_view info)
{
    server_counters c;
    while (!info.empty()) {
        const auto eol = info.find('\n');
        std::string_view line = info.substr(0, eol);
        info.remove_prefix(eol == std::string_view::npos ? info.size() : eol + 1);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) {
            continue;
        }
        const std::string_view name = line.substr(0, colon);
        const std::string_view value = line.substr(colon + 1);
        if (name == "total_commands_processed") {
            c.commands = number_in(value);
        } else if (name == "used_cpu_sys" || name == "used_cpu_user") {
            c.cpu_s += number_in(value);
        } else if (name.starts_with("cmdstat_")) {
            // cmdstat_set:calls=10,usec=25,usec_per_call=2.50,rejected_calls=0,failed_calls=0
            command_cost& cost = c.by_command[std::string(name.substr(8))];
            for (std::string_view rest = value; !rest.empty();) {
                const auto comma = rest.find(',');
                const std::string_view field = rest.substr(0, comma);
                rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
                if (field.starts_with("calls=")) {
                    cost.calls = number_in(field.substr(6));
                } else if (field.starts_with("usec=")) {
                    cost.usec = number_in(field.substr(5));
                }
            }
        }
    }
    return c;
}

// The port of each node when every one is a server on this machine (redis://host:port with
// host 127.0.0.1 or localhost, and optionally user:password@ or /db), which the counters are
// read from; none otherwise.
std::optional<std::vector<std::uint16_t>> loopback_ports(const std::vector<std::string>& urls)
{
    std::vector<std::uint16_t> ports;
    for (std::string_view url : urls) {
        if (!url.starts_with("redis://")) {
            return std::nullopt;
        }
        url.remove_prefix(8);
        url = url.substr(0, url.find('/'));
        if (const auto at = url.rfind('@'); at != std::string_view::npos) {
            url.remove_prefix(at + 1);
        }
        const auto colon = url.rfind(':');
        const std::string_view host = url.substr(0, colon);
        if (colon == std::string_view::npos || (host != "127.0.0.1" && host != "localhost")) {
            return std::nullopt;
        }
        const std::string_view digits = url.substr(colon + 1);
        std::uint16_t port = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
        if (ec != std::errc() || end != digits.data() + digits.size()) {
            return std::nullopt;
        }
        ports.push_back(port);
    }
    return ports;
}

// Every server's counters, summed. A new connection to each (the harness's blocking
// client, which sends nothing but the command), so that the reading adds one INFO per server
// and nothing else. Throws std::runtime_error when a server does not answer.
server_counters read_counters(const std::vector<std::uint16_t>& ports)
{
    server_counters sum;
    for (std::uint16_t port : ports) {
        // "all" has stats, cpu and commandstats in one command.
        sum += parse_info(redlock::test::redis_command(port, {"INFO", "all"}));
    }
    return sum;
}

// The servers' work over a window, and per grant made in it.
struct server_cost
{
    bool known = false;
    // Over the whole window.
    double commands = 0;
    double cpu_ms = 0;
    double cpu_cores = 0;  // CPU seconds per second of the window, summed over the servers
    // Per grant: NaN (null in JSON) when there was none.
    double commands_per_grant = 0;
    double cpu_ms_per_grant = 0;
    json by_command;  // name -> {calls, usec} per grant

    static server_cost of(const server_counters& d, std::int64_t grants, double secs)
    {
        server_cost c;
        c.known = true;
        const auto per_grant = [grants](double v) {
            return grants > 0 ? v / static_cast<double>(grants)
                              : std::numeric_limits<double>::quiet_NaN();
        };
        c.commands = d.commands;
        c.cpu_ms = d.cpu_s * 1e3;
        c.cpu_cores = ratio(d.cpu_s, secs);
        c.commands_per_grant = per_grant(c.commands);
        c.cpu_ms_per_grant = per_grant(c.cpu_ms);
        for (const auto& [name, cost] : d.by_command) {
            c.by_command.add(
                name, json().add("calls", per_grant(cost.calls)).add("usec", per_grant(cost.usec)));
        }
        return c;
    }

    json& add_to(json& j) const
    {
        if (!known) {
            return j.add_verbatim("server_commands", "null")
                .add_verbatim("server_cpu_ms", "null")
                .add_verbatim("server_commands_per_grant", "null")
                .add_verbatim("server_cpu_ms_per_grant", "null")
                .add_verbatim("servers_cores", "null")
                .add_verbatim("commandstats_per_grant", "null");
        }
        return j.add("server_commands", commands)
            .add("server_cpu_ms", cpu_ms)
            .add("server_commands_per_grant", commands_per_grant)
            .add("server_cpu_ms_per_grant", cpu_ms_per_grant)
            .add("servers_cores", cpu_cores)
            .add("commandstats_per_grant", by_command);
    }

    std::string text() const
    {
        if (!known) {
            return "servers' counters unknown (nodes not on this machine)";
        }
        if (!std::isfinite(commands_per_grant)) {
            return strf("no grant: servers %.0f commands and %.1f ms CPU in all (%.2f cores)",
                        commands, cpu_ms, cpu_cores);
        }
        return strf("servers %.1f commands and %.3f ms CPU per grant (%.2f cores)",
                    commands_per_grant, cpu_ms_per_grant, cpu_cores);
    }
};

// Reads the counters around a window, when the nodes are on this machine.
class counter_window
{
  public:
    explicit counter_window(const run_settings& rs) : ports_(loopback_ports(rs.urls)) {}
    bool known() const { return ports_.has_value(); }
    void start()
    {
        if (ports_) {
            before_ = read_counters(*ports_);
        }
    }
    void stop()
    {
        if (ports_) {
            after_ = read_counters(*ports_);
        }
    }
    server_cost cost(std::int64_t grants, double secs) const
    {
        return ports_ ? server_cost::of(difference(after_, before_), grants, secs) : server_cost{};
    }

  private:
    std::optional<std::vector<std::uint16_t>> ports_;
    server_counters before_, after_;
};

// ---------------------------------------------------------------------------------------
// The workers

enum class lock_kind { uncontended, plain, fair, semaphore, rw };

std::string_view name_of(lock_kind k)
{
    switch (k) {
        case lock_kind::uncontended:
            return "uncontended";
        case lock_kind::plain:
            return "plain";
        case lock_kind::fair:
            return "fair";
        case lock_kind::semaphore:
            return "semaphore";
        case lock_kind::rw:
            return "rw";
    }
    return "?";
}

lock_kind kind_named(std::string_view name)
{
    for (lock_kind k : {lock_kind::plain, lock_kind::fair, lock_kind::semaphore, lock_kind::rw}) {
        if (name == name_of(k)) {
            return k;
        }
    }
    throw std::invalid_argument("scaling: unknown lock kind " + std::string(name));
}

// What the worker processes of one row share with this one (in a shared mapping).
struct scaling_shared
{
    std::atomic<bool> stop{false};
    /// Acquisitions count while it is set: the measured window.
    std::atomic<bool> measuring{false};
    /// Holders in their critical sections now: exclusive ones times 2^32 plus shared ones,
    /// in one word, so that each entry sees the others exactly as they are.
    std::atomic<std::int64_t> inside{0};
    /// How many shared holders the lock admits together (the semaphore's permits).
    std::int64_t shared_limit = 0;
    std::atomic<std::int64_t> violations{0};
    std::atomic<std::int64_t> acquire_errors{0};
    std::atomic<std::int64_t> release_errors{0};
    /// Grants made in the window, by process.
    std::array<std::atomic<std::int64_t>, scaling_max_processes> grants{};
    /// The time those grants were held (acquired to leaving), summed.
    std::atomic<std::int64_t> held_ns{0};
    std::atomic<bool> error_noted{false};
    char first_error[1024] = {};

    void note_error(const std::string& what)
    {
        if (!error_noted.exchange(true)) {
            std::snprintf(first_error, sizeof first_error, "%s", what.c_str());
        }
    }
};

// Processes share these atomics through the mapping: only lock-free ones work across them.
static_assert(std::atomic<std::int64_t>::is_always_lock_free &&
              std::atomic<bool>::is_always_lock_free);

constexpr std::int64_t exclusive_unit = std::int64_t{1} << 32;

// Whether the holders `inside` (as scaling_shared::inside counts them) may be in together.
bool admissible(std::int64_t inside, std::int64_t shared_limit)
{
    const std::int64_t exclusive = inside / exclusive_unit;
    const std::int64_t shared = inside % exclusive_unit;
    return exclusive == 0 ? shared <= shared_limit : exclusive == 1 && shared == 0;
}

// Acquire, hold (not at all for a zero hold), release, until the run stops.
asio::awaitable<void> hold_loop(scaling_shared& sh, int process,
                                std::function<asio::awaitable<acquired_lock>()> acquire,
                                bool exclusive, milliseconds hold)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const std::int64_t unit = exclusive ? exclusive_unit : 1;
    while (!sh.stop) {
        auto [ec, g] = co_await acquire();
        const auto acquired = clock::now();
        const bool counted = sh.measuring;
        if (ec) {
            ++sh.acquire_errors;
            sh.note_error(ec.message() + "\n" + g.last_report().to_string());
            timer.expires_after(milliseconds(10));  // not a busy loop on errors
            co_await timer.async_wait(asio::as_tuple(asio::deferred));
            continue;
        }
        if (!admissible(sh.inside.fetch_add(unit) + unit, sh.shared_limit)) {
            ++sh.violations;
        }
        if (hold.count() > 0) {
            timer.expires_after(hold);
            co_await timer.async_wait(asio::as_tuple(asio::deferred));
        }
        const auto left = clock::now();
        sh.inside.fetch_sub(unit);
        if (counted) {
            ++sh.grants[static_cast<std::size_t>(process)];
            sh.held_ns +=
                std::chrono::duration_cast<std::chrono::nanoseconds>(left - acquired).count();
        }
        auto [release_ec] = co_await g.async_release(asio::as_tuple(asio::deferred));
        if (release_ec) {
            ++sh.release_errors;
            sh.note_error(release_ec.message() + "\n" + g.last_report().to_string());
        }
    }
}

// One row's lock and timing.
struct row_spec
{
    lock_kind kind = lock_kind::plain;
    int processes = 1;
    milliseconds hold{1};
    int permits = 1;
    std::string key;
};

// The body of worker process `p`: an io_context and a client of its own, as a service has.
int worker_process(const run_settings& rs, scaling_shared& sh, const row_spec& row, int p)
{
    try {
        asio::io_context io;
        redlock::client client(io.get_executor(), redlock::config::from_urls(rs.urls));
        redlock::options opts;
        opts.tries = 1'000'000;  // a worker waits as long as it takes; the run's end stops it
        opts.fair = row.kind == lock_kind::fair;
        std::function<asio::awaitable<acquired_lock>()> acquire;
        bool exclusive = true;
        switch (row.kind) {
            case lock_kind::uncontended:
            case lock_kind::plain:
            case lock_kind::fair:
                acquire = [m = client.make_mutex(
                               row.key, opts)]() mutable -> asio::awaitable<acquired_lock> {
                    co_return co_await m.async_acquire(asio::as_tuple(asio::deferred));
                };
                break;
            case lock_kind::semaphore:
                exclusive = false;
                acquire = [s = client.make_semaphore(row.key, row.permits, opts)]() mutable
                    -> asio::awaitable<acquired_lock> {
                    co_return co_await s.async_acquire(asio::as_tuple(asio::deferred));
                };
                break;
            case lock_kind::rw:
                // Process 0 writes, the others read.
                exclusive = p == 0;
                acquire = [m = client.make_rw_mutex(row.key, opts),
                           writer = exclusive]() mutable -> asio::awaitable<acquired_lock> {
                    if (writer) {
                        co_return co_await m.async_acquire(asio::as_tuple(asio::deferred));
                    }
                    co_return co_await m.async_acquire_shared(asio::as_tuple(asio::deferred));
                };
                break;
        }
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                co_await hold_loop(sh, p, std::move(acquire), exclusive, row.hold);
                auto [ec] = co_await client.async_shutdown(asio::as_tuple(asio::deferred));
                if (ec) {
                    sh.note_error("client shutdown: " + ec.message());
                }
            },
            [](const std::exception_ptr& e) {
                if (e) {
                    std::rethrow_exception(e);
                }
            });
        io.run();
        return 0;
    } catch (const std::exception& e) {
        sh.note_error("worker process " + std::to_string(p) + ": " + e.what());
        return 1;
    }
}

// What one row measured.
struct row_figures
{
    double seconds = 0;
    std::vector<std::int64_t> per_process;
    std::int64_t grants = 0;
    double held_s = 0;  // the grants' holds, summed
    std::int64_t acquire_errors = 0;
    std::int64_t release_errors = 0;
    std::int64_t failed_processes = 0;
    std::int64_t violations = 0;
    std::string first_error;
    server_cost servers;

    double rate() const { return ratio(static_cast<double>(grants), seconds); }
    double mean_hold_us() const { return ratio(held_s * 1e6, static_cast<double>(grants)); }
};

// Forks the row's processes, lets them warm up, reads the counters, measures, reads the
// counters again, then stops the workers (each finishes the acquisition it is in) and waits.
row_figures measure_row(const run_settings& rs, const row_spec& row)
{
    shared_mapping<scaling_shared> mapping;
    scaling_shared& sh = *mapping;
    sh.shared_limit = row.kind == lock_kind::semaphore ? row.permits
                      : row.kind == lock_kind::rw      ? std::int64_t{row.processes}
                                                       : 0;
    counter_window counters(rs);
    const std::vector<pid_t> children =
        fork_workers(row.processes, [&](int p) { return worker_process(rs, sh, row, p); });
    const int fork_error = errno;
    clock::time_point t0, t1;
    try {
        if (static_cast<int>(children.size()) != row.processes) {
            throw std::system_error(fork_error, std::generic_category(), "fork");
        }
        std::this_thread::sleep_for(rs.warmup);
        counters.start();
        t0 = clock::now();
        sh.measuring = true;
        std::this_thread::sleep_for(rs.duration);
        sh.measuring = false;
        t1 = clock::now();
        counters.stop();
    } catch (...) {
        sh.stop = true;
        wait_workers(children);
        throw;
    }
    sh.stop = true;
    row_figures f;
    f.failed_processes = wait_workers(children);
    f.seconds = seconds(t1 - t0);
    for (int p = 0; p < row.processes; ++p) {
        f.per_process.push_back(sh.grants[static_cast<std::size_t>(p)].load());
    }
    f.grants = std::accumulate(f.per_process.begin(), f.per_process.end(), std::int64_t{0});
    f.held_s = static_cast<double>(sh.held_ns.load()) / 1e9;
    f.acquire_errors = sh.acquire_errors;
    f.release_errors = sh.release_errors;
    f.violations = sh.violations;
    if (sh.error_noted) {
        f.first_error = sh.first_error;
    }
    f.servers = counters.cost(f.grants, f.seconds);
    return f;
}

// The least count as a share of the mean (1: an even share); 0 for none.
double min_vs_mean(std::vector<std::int64_t>::const_iterator first,
                   std::vector<std::int64_t>::const_iterator last)
{
    if (first == last) {
        return 0;
    }
    const double total = static_cast<double>(std::accumulate(first, last, std::int64_t{0}));
    const double mean = total / static_cast<double>(last - first);
    return ratio(static_cast<double>(*std::min_element(first, last)), mean);
}

std::string times_text(double r)
{
    return r > 0 ? strf("%.2g x", r) : std::string("-");
}

// The baseline's figures per grant, to compare each row's with.
struct baseline
{
    double commands_per_grant = 0;
    double cpu_ms_per_grant = 0;
};

json& add_vs_baseline(json& j, const server_cost& c, const baseline& b)
{
    return j
        .add("server_commands_vs_uncontended", ratio(c.commands_per_grant, b.commands_per_grant))
        .add("server_cpu_vs_uncontended", ratio(c.cpu_ms_per_grant, b.cpu_ms_per_grant));
}

// Errors and violations make the row's figures suspect: the program fails.
void check(const row_figures& f, const std::string& what)
{
    if (!f.first_error.empty()) {
        say("first error: " + f.first_error);
    }
    if (f.violations > 0) {
        note_failure(what + ": " + std::to_string(f.violations) +
                     " grants found holders in the critical section that the lock must not "
                     "admit together");
    }
    if (f.acquire_errors + f.release_errors + f.failed_processes > 0) {
        note_failure(strf("%s: %lld acquire and %lld release errors, %lld worker processes failed",
                          what.c_str(), static_cast<long long>(f.acquire_errors),
                          static_cast<long long>(f.release_errors),
                          static_cast<long long>(f.failed_processes)));
    }
}

baseline run_uncontended_row(const run_settings& rs)
{
    const row_spec row{lock_kind::uncontended, 1, milliseconds(0), 1, rs.key_prefix + ":s:u"};
    const row_figures f = measure_row(rs, row);
    say(
        strf("scaling uncontended (one process, one coroutine, its own key, no hold): %s "
             "cycles/s; %s; errors %lld",
             grouped(f.rate()).c_str(), f.servers.text().c_str(),
             static_cast<long long>(f.acquire_errors + f.release_errors)));
    check(f, "scaling uncontended");
    json j;
    j.add("scenario", "scaling")
        .add("kind", "uncontended")
        .add("processes", 1)
        .add("hold_ms", 0)
        .add("nodes", rs.urls.size())
        .add("duration_s", f.seconds)
        .add("grants", f.grants)
        .add("grants_per_s", f.rate());
    f.servers.add_to(j)
        .add("errors", f.acquire_errors + f.release_errors + f.failed_processes)
        .add("violations", f.violations);
    result(j);
    return {f.servers.commands_per_grant, f.servers.cpu_ms_per_grant};
}

void run_row(const run_settings& rs, const row_spec& row, const baseline& base)
{
    const row_figures f = measure_row(rs, row);
    const double rate = f.rate();
    const double hold_us = f.mean_hold_us();
    // The rate at which the lock could change hands if acquiring cost nothing: one holder at
    // a time for plain, fair and (for its writer, taken as the bound) rw; as many as there
    // are permits, or processes if fewer, for the semaphore. An rw row above 1 shows readers
    // sharing the lock.
    const double holders_at_once =
        row.kind == lock_kind::semaphore ? std::min(row.permits, row.processes) : 1;
    const double ceiling = hold_us > 0 ? holders_at_once * 1e6 / hold_us : 0.0;
    const double mean_holders = ratio(f.held_s, f.seconds);
    // The writer's count (process 0) differs from the readers' by design: the readers' spread.
    const auto spread_from = f.per_process.begin() + (row.kind == lock_kind::rw ? 1 : 0);
    const double spread = min_vs_mean(spread_from, f.per_process.end());
    const std::string kind(name_of(row.kind));
    std::string kind_text = kind;
    if (row.kind == lock_kind::semaphore) {
        kind_text += strf(" (%d permits)", row.permits);
    }
    std::string rw_text;
    if (row.kind == lock_kind::rw) {
        rw_text =
            strf(" (writes %s/s, reads %s/s)",
                 grouped(static_cast<double>(f.per_process[0]) / f.seconds).c_str(),
                 grouped(static_cast<double>(f.grants - f.per_process[0]) / f.seconds).c_str());
    }
    say(
        strf("scaling %s, %d processes, hold %lld ms: %s grants/s%s (%s of the hold's ceiling "
             "%s/s), holders in on average %.2f, least process / mean %.2f; %s (%s / %s "
             "uncontended); errors %lld, violations %lld",
             kind_text.c_str(), row.processes, static_cast<long long>(row.hold.count()),
             grouped(rate).c_str(), rw_text.c_str(), strf("%.2f", ratio(rate, ceiling)).c_str(),
             grouped(ceiling).c_str(), mean_holders, spread, f.servers.text().c_str(),
             times_text(ratio(f.servers.commands_per_grant, base.commands_per_grant)).c_str(),
             times_text(ratio(f.servers.cpu_ms_per_grant, base.cpu_ms_per_grant)).c_str(),
             static_cast<long long>(f.acquire_errors + f.release_errors + f.failed_processes),
             static_cast<long long>(f.violations)));
    check(f, strf("scaling %s, %d processes", kind.c_str(), row.processes));
    json j;
    j.add("scenario", "scaling")
        .add("kind", kind)
        .add("processes", row.processes)
        .add("hold_ms", row.hold.count())
        .add("nodes", rs.urls.size());
    if (row.kind == lock_kind::semaphore) {
        j.add("permits", row.permits);
    }
    j.add("duration_s", f.seconds)
        .add("grants", f.grants)
        .add("grants_per_s", rate)
        .add("mean_hold_us", hold_us)
        .add("hold_ceiling_per_s", ceiling)
        .add("hold_ceiling_holders", holders_at_once)
        .add("vs_hold_ceiling", ratio(rate, ceiling))
        .add("per_process", f.per_process)
        .add("per_process_min_vs_mean", spread)
        .add("mean_holders", mean_holders);
    if (row.kind == lock_kind::semaphore) {
        j.add("permits_in_use", mean_holders);
    }
    if (row.kind == lock_kind::rw) {
        j.add("writes_per_s", static_cast<double>(f.per_process[0]) / f.seconds)
            .add("reads_per_s", static_cast<double>(f.grants - f.per_process[0]) / f.seconds);
    }
    f.servers.add_to(j);
    add_vs_baseline(j, f.servers, base)
        .add("errors", f.acquire_errors + f.release_errors + f.failed_processes)
        .add("violations", f.violations);
    result(j);
}

// ---------------------------------------------------------------------------------------
// The peer

// The text of member `key`'s value in the JSON object `text` (a number, or an array or
// object with its brackets); empty when it is not there. Enough for the peer's flat RESULT.
std::string member_text(std::string_view text, std::string_view key)
{
    const std::string quoted = "\"" + std::string(key) + "\"";
    auto at = text.find(quoted);
    while (at != std::string_view::npos) {
        auto p = at + quoted.size();
        while (p < text.size() && text[p] == ' ') {
            ++p;
        }
        if (p < text.size() && text[p] == ':') {
            ++p;
            while (p < text.size() && text[p] == ' ') {
                ++p;
            }
            const auto begin = p;
            int depth = 0;
            for (; p < text.size(); ++p) {
                const char c = text[p];
                if (c == '[' || c == '{') {
                    ++depth;
                } else if (c == ']' || c == '}') {
                    if (depth == 0) {
                        break;
                    }
                    if (--depth == 0) {
                        ++p;
                        break;
                    }
                } else if (c == ',' && depth == 0) {
                    break;
                }
            }
            return std::string(text.substr(begin, p - begin));
        }
        at = text.find(quoted, at + 1);
    }
    return {};
}

std::optional<double> member_number(std::string_view text, std::string_view key)
{
    const std::string v = member_text(text, key);
    double d = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
        return std::nullopt;
    }
    return d;
}

std::string shell_quoted(std::string_view s)
{
    std::string q = "'";
    for (char c : s) {
        if (c == '\'') {
            q += "'\\''";
        } else {
            q += c;
        }
    }
    return q + "'";
}

std::string peer_script(const scaling_settings& s)
{
    return s.peer_script.empty() ? std::string(REDLOCK_BENCH_SOURCE_DIR) + "/peer/run.sh"
                                 : s.peer_script;
}

// Runs the peer's script for `processes` processes on the same servers, with the counters
// read around it, and reports its row as kind "node-redlock". The script gets no warm-up
// (--warmup 0): the counters see everything it did, and what it counts is then every grant
// the servers made for it. A missing or failing script, or one that prints no RESULT, is
// a failure of the run.
void run_peer_row(const run_settings& rs, const scaling_settings& s, int processes,
                  const baseline& base, double idle_cpu_ms_per_s)
{
    const std::string script = peer_script(s);
    const std::string what = strf("scaling %s, %d processes", s.peer.c_str(), processes);
    struct stat st
    {
    };
    if (::stat(script.c_str(), &st) != 0 || ::access(script.c_str(), X_OK) != 0) {
        note_failure(what + ": the peer's script " + script +
                     " is missing or not executable (--peer-script PATH)");
        return;
    }
    std::string nodes;
    for (const auto& u : rs.urls) {
        nodes += (nodes.empty() ? "" : ",") + u;
    }
    const double duration_s = seconds(rs.duration);
    // A bound on the whole script (node start-up included), so that a hung peer cannot hang
    // this program.
    const long limit_s = static_cast<long>(duration_s) + 120;
    const std::string key = rs.key_prefix + ":s:" + s.peer + ":" + std::to_string(processes);
    const std::string command =
        strf("timeout -k 10 %ld ", limit_s) + shell_quoted(script) + " --nodes " +
        shell_quoted(nodes) + " --processes " + std::to_string(processes) + " --hold-ms " +
        std::to_string(s.hold.count()) + " --duration " + json::number(duration_s) +
        " --warmup 0 --key " + shell_quoted(key) + " 2>&1";

    counter_window counters(rs);
    counters.start();
    const auto t0 = clock::now();
    std::fflush(nullptr);
    FILE* out = ::popen(command.c_str(), "r");
    if (!out) {
        note_failure(what + ": cannot run " + script + ": " + std::strerror(errno));
        return;
    }
    std::string output;
    std::array<char, 4096> buffer{};
    while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), out)) {
        output += buffer.data();
    }
    const int status = ::pclose(out);
    const auto t1 = clock::now();
    counters.stop();

    std::string peer_result, peer_line;
    for (std::string_view rest = output; !rest.empty();) {
        const auto eol = rest.find('\n');
        const std::string_view line = rest.substr(0, eol);
        rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
        if (line.starts_with("RESULT ")) {
            peer_result = std::string(line.substr(7));
        } else if (!line.empty() && peer_line.empty()) {
            peer_line = std::string(line);
        }
    }
    const auto acquisitions = member_number(peer_result, "acquisitions");
    const bool exited = status != -1 && WIFEXITED(status);
    if (!exited || WEXITSTATUS(status) != 0 || !acquisitions) {
        // timeout(1) exits with 124 when the bound above stopped the script.
        const std::string how = !exited        ? std::string("did not exit normally")
                                : acquisitions ? strf("exited with status %d", WEXITSTATUS(status))
                                               : strf(
                                                     "exited with status %d and printed no "
                                                     "RESULT with acquisitions",
                                                     WEXITSTATUS(status));
        note_failure(what + ": the peer's script " + how + "; its output:\n" + output);
        return;
    }
    const auto grants = static_cast<std::int64_t>(*acquisitions);
    const double rate = member_number(peer_result, "acquisitions_per_s").value_or(0);
    // An acquire that spent node-redlock's retries (its default 10) is how that library
    // answers contention, a figure here; an error from Redis or a violation is a failure.
    const double acquire_errors = member_number(peer_result, "acquire_errors").value_or(0);
    const double errors = member_number(peer_result, "redis_errors").value_or(0) +
                          member_number(peer_result, "release_errors").value_or(0);
    const double violations = member_number(peer_result, "violations").value_or(0);
    // The counters cover the script's whole run: its processes' start and end too, when the
    // servers idle. Less what idle servers use in the time outside the script's window, the
    // CPU per grant of the window alone (an estimate: the start also opens connections).
    const server_cost cost = counters.cost(grants, seconds(t1 - t0));
    const double window_s = member_number(peer_result, "duration_s").value_or(duration_s);
    const double outside_s = std::max(0.0, seconds(t1 - t0) - window_s);
    const double less_idle =
        grants > 0 ? (cost.cpu_ms - idle_cpu_ms_per_s * outside_s) / static_cast<double>(grants)
                   : std::numeric_limits<double>::quiet_NaN();
    say(
        strf("scaling %s, %d processes, hold %lld ms: %s grants/s (%s of the hold's ceiling), "
             "least process / mean %s, acquires that spent their retries %.0f; %s over the "
             "script's whole run of %.1f s (%s / %s uncontended; %.3f ms CPU per grant less the "
             "idle servers' %.1f ms/s outside its window); errors %.0f, violations %.0f; "
             "the script said: %s",
             s.peer.c_str(), processes, static_cast<long long>(s.hold.count()),
             grouped(rate).c_str(), member_text(peer_result, "vs_hold_ceiling").c_str(),
             member_text(peer_result, "per_process_min_vs_mean").c_str(), acquire_errors,
             cost.text().c_str(), seconds(t1 - t0),
             times_text(ratio(cost.commands_per_grant, base.commands_per_grant)).c_str(),
             times_text(ratio(cost.cpu_ms_per_grant, base.cpu_ms_per_grant)).c_str(), less_idle,
             idle_cpu_ms_per_s, errors, violations, peer_line.c_str()));
    if (violations > 0) {
        note_failure(what + ": the peer's script saw mutual-exclusion violations");
    }
    if (errors > 0) {
        note_failure(what + ": the peer's script saw Redis or release errors");
    }
    json j;
    j.add("scenario", "scaling")
        .add("kind", s.peer)
        .add("processes", processes)
        .add("hold_ms", s.hold.count())
        .add("nodes", rs.urls.size())
        .add("duration_s", window_s)
        .add("peer_warmup_s", 0)
        .add("counters_window_s", seconds(t1 - t0))
        .add("grants", grants)
        .add("grants_per_s", rate);
    for (const char* k :
         {"hold_ceiling_per_s", "vs_hold_ceiling", "per_process", "per_process_min_vs_mean"}) {
        if (const std::string v = member_text(peer_result, k); !v.empty()) {
            j.add_verbatim(k, v);
        }
    }
    cost.add_to(j)
        .add("servers_idle_cpu_ms_per_s", idle_cpu_ms_per_s)
        .add("server_cpu_ms_per_grant_less_idle", less_idle);
    add_vs_baseline(j, cost, base)
        .add("acquire_errors", static_cast<std::int64_t>(acquire_errors))
        .add("errors", static_cast<std::int64_t>(errors))
        .add("violations", static_cast<std::int64_t>(violations))
        .add_verbatim("peer_result", peer_result);
    result(j);
}

}  // namespace

void run_scaling(const run_settings& rs, const scaling_settings& s)
{
    for (int p : s.processes) {
        if (p < 1 || p > scaling_max_processes) {
            throw std::invalid_argument("scaling: process counts are 1.." +
                                        std::to_string(scaling_max_processes));
        }
    }
    if (!loopback_ports(rs.urls)) {
        say("scaling: the nodes are not all on this machine (redis://127.0.0.1:PORT): the "
            "servers' counters are not read");
    }
    const baseline base = run_uncontended_row(rs);
    // What the servers use while nobody locks: the peer's rows subtract it from the time
    // their counters saw outside the script's window.
    double idle_cpu_ms_per_s = 0;
    if (!s.peer.empty()) {
        counter_window idle(rs);
        idle.start();
        const auto from = clock::now();
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const double secs = seconds(clock::now() - from);
        idle.stop();
        idle_cpu_ms_per_s = idle.cost(0, secs).cpu_ms / secs;
    }
    for (const auto& name : s.kinds) {
        const lock_kind kind = kind_named(name);
        for (int p : s.processes) {
            const row_spec row{kind, p, s.hold, s.permits,
                               rs.key_prefix + ":s:" + name + ":" + std::to_string(p)};
            run_row(rs, row, base);
            if (kind == lock_kind::plain && !s.peer.empty()) {
                run_peer_row(rs, s, p, base, idle_cpu_ms_per_s);
            }
        }
    }
}

}  // namespace bench
