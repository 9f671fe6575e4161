// SPDX-License-Identifier: BSL-1.0
// fault_worker: one client process of the fault-injection suite (driver.cpp starts several).
//
//   fault_worker --id N --nodes URL,URL,... --resource-port P --keys K,K,...
//                --expiry-ms E --work-ms W --duration-ms D --seed S
//                [--wait-for-replicas R] [--auto-extend 0|1]
//
// --nodes splits as the CLI's lists do: a comma followed by `scheme://` starts the next node,
// other commas belong to the URL (a Sentinel URL's Sentinels, a cluster URL's seeds), so that
// one redis-sentinel:// or redis-cluster:// URL can be the only node.
//
// Until D ms have passed it locks a random key of K (with fencing) and, holding it, runs a
// read-modify-write on that key's counter twice in the resource server on port P: once fenced
// (redlock::fenced_store, hash "fenced:<key>") and once as a plain GET/SET ("shadow:<key>"),
// the latter to show what the same critical sections would lose without fencing. Each critical
// section becomes one `section` line on stdout (checker.hpp has the format), written with one
// write(2) before the release starts.
//
// SIGUSR1 arms a self-stop: the next critical section whose acquisition began after the
// signal, between its reads and its writes, prints a `stop` line and raises SIGSTOP, so that
// the driver pauses a lock holder at exactly that point (a GC pause, a swapped-out process)
// and resumes it with SIGCONT when it wants. Raising the stop here, rather than sending it
// from the driver, leaves no race about where the process was when it stopped; and since the
// lock was requested after the signal, it was requested after whatever fault the driver
// applied before sending it (e.g. a replica cut off, which the lock then never reached).
//
// --connect-timeout-ms T sets config::connect_timeout (the partition scenarios: a connect
// begun while the network was cut waits out this timeout after the heal).
// --wait-for-replicas R sets options::wait_for_replicas. --auto-extend 1 turns the watchdog on
// (options::auto_extend), so that a long --work-ms keeps its lock by extensions; a lock that
// the guard reports lost (guard::lost()) after its section is logged as a `lost` line (a failed
// acquisition's per-node report follows its `acquire_failed` line as `acquire_report`). SIGTERM
// ends the run early: the worker finishes its current section and exits as after D ms.
//
// Three more modes serve scenarios that need no resource server (--resource-port may be left
// out for them):
//
//   --mode waiters --waiters N [--permits L | --shared-percent P]   N coroutines of this one
//       client take turns on the first key of K (a mutex; with L a semaphore of L permits; with
//       P a read-write lock, read P% of the time), each re-acquiring right after its own
//       release, until D ms have passed. Each
//       critical section (a hold of W ms) is a `section` line with no fenced or shadow work, so
//       that the driver sees which process held the key when, and for how long in a row; its
//       `call` field is the moment the acquire was called. [--fair 1] makes the mutex fair
//       (options::fair), with a `wait` of ten expiries: long enough that a waiter gives up only
//       far past the wait bound the driver checks. [--announce 1] also logs a `hold` line
//       (key, owner, start, until) as each section begins, so that the driver can fault a
//       process while it holds the lock.
//   --mode probe                 connects (a `connected` line), waits for SIGUSR1, then makes
//       one try_acquire of the first key of K, reported as a `probe` line (acquired=0 or 1,
//       and the error). The client then stays up, so that whatever it still has to send to
//       its nodes can go out, until SIGTERM or D ms.
//   --mode elect                 one candidate of an election on the first key of K (a fair
//       lock with the watchdog, so that it leads past its expiry) that campaigns with the
//       proposal "w<N>" (its id), leads for W ms, resigns and campaigns again, until D ms
//       have passed; and an observer of the same election that calls observe(last seen) in a
//       loop. The candidate logs a `lead` line as its campaign completes (value, term, the
//       moment, the guard's validity), an `extended` line with the new validity at each of
//       the watchdog's extensions (on the client's strand, as the extension is stored), a
//       `lost` line when the guard reports its loss, and a `resign` line before its release
//       begins; the observer logs a `view` line for each leader it sees, or nobody
//       (checker.hpp has the formats). SIGTERM ends the run at once: a campaign or a hold is
//       cancelled, and a leader resigns.
//
// Exit status 0 after D ms, 1 on an unexpected failure (printed as a `fatal` line), 2 on bad
// arguments.

#include <redlock/fenced_store.hpp>
#include <redlock/redlock.hpp>

#include "checker.hpp"
#include "common/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::faults::outcome;

namespace {

volatile std::sig_atomic_t stop_armed = 0;
volatile std::sig_atomic_t end_requested = 0;

extern "C" void on_sigusr1(int)
{
    stop_armed = 1;
}

extern "C" void on_sigterm(int)
{
    end_requested = 1;
}

struct arguments
{
    int id = 0;
    std::vector<std::string> nodes;
    std::uint16_t resource_port = 0;
    std::vector<std::string> keys;
    std::chrono::milliseconds expiry{1000};
    std::chrono::milliseconds work{2};
    std::chrono::milliseconds duration{5000};
    unsigned seed = 0;
    std::string mode = "sections";
    int waiters = 1;
    int permits = 0;          // mode waiters: 0 locks a mutex, L a semaphore of L permits
    int shared_percent = -1;  // mode waiters: from 0 to 100, a read-write lock, read that often
    bool fair = false;        // mode waiters: a fair mutex
    bool announce = false;    // mode waiters: a `hold` line as each section begins
    std::chrono::milliseconds connect_timeout{0};  // 0: the library's default
    int wait_for_replicas = 0;
    bool auto_extend = false;
};

// One write(2) per line: the driver reads the log while the worker writes it, and must never
// see half a line as a whole one.
void emit(std::string line)
{
    line += '\n';
    std::string_view rest = line;
    while (!rest.empty()) {
        const ssize_t n = ::write(STDOUT_FILENO, rest.data(), rest.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Messages go into `why=`, which runs to the end of the line: keep them on one line.
std::string one_line(std::string s)
{
    for (char& c : s)
        if (c == '\n' || c == '\r')
            c = ' ';
    return s;
}

[[noreturn]] void usage(const std::string& problem)
{
    std::fprintf(stderr,
                 "fault_worker: %s\nusage: fault_worker --id N --nodes URL,... --resource-port P "
                 "--keys K,... --expiry-ms E --work-ms W --duration-ms D --seed S\n"
                 "       [--mode sections|waiters|probe|elect] (see the source's header)\n",
                 problem.c_str());
    std::exit(2);
}

std::vector<std::string> split(std::string_view list)
{
    std::vector<std::string> out;
    while (!list.empty()) {
        const auto comma = list.find(',');
        out.emplace_back(list.substr(0, comma));
        list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
    }
    return out;
}

long long number(std::string_view flag, std::string_view s)
{
    long long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0)
        usage(std::string(flag) + " wants a non-negative number, not '" + std::string(s) + "'");
    return v;
}

arguments parse(int argc, char** argv)
{
    arguments a;
    for (int i = 1; i < argc; i += 2) {
        const std::string_view flag = argv[i];
        if (i + 1 >= argc)
            usage(std::string(flag) + " needs a value");
        const std::string_view value = argv[i + 1];
        if (flag == "--id")
            a.id = static_cast<int>(number(flag, value));
        else if (flag == "--nodes")
            for (std::string_view url : redlock::split_node_urls(value))
                a.nodes.emplace_back(url);
        else if (flag == "--resource-port")
            a.resource_port = static_cast<std::uint16_t>(number(flag, value));
        else if (flag == "--keys")
            a.keys = split(value);
        else if (flag == "--expiry-ms")
            a.expiry = std::chrono::milliseconds(number(flag, value));
        else if (flag == "--work-ms")
            a.work = std::chrono::milliseconds(number(flag, value));
        else if (flag == "--duration-ms")
            a.duration = std::chrono::milliseconds(number(flag, value));
        else if (flag == "--seed")
            a.seed = static_cast<unsigned>(number(flag, value));
        else if (flag == "--mode")
            a.mode = std::string(value);
        else if (flag == "--waiters")
            a.waiters = static_cast<int>(number(flag, value));
        else if (flag == "--permits")
            a.permits = static_cast<int>(number(flag, value));
        else if (flag == "--shared-percent")
            a.shared_percent = static_cast<int>(number(flag, value));
        else if (flag == "--wait-for-replicas")
            a.wait_for_replicas = static_cast<int>(number(flag, value));
        else if (flag == "--auto-extend")
            a.auto_extend = number(flag, value) != 0;
        else if (flag == "--fair")
            a.fair = number(flag, value) != 0;
        else if (flag == "--announce")
            a.announce = number(flag, value) != 0;
        else if (flag == "--connect-timeout-ms")
            a.connect_timeout = std::chrono::milliseconds(number(flag, value));
        else
            usage("unknown argument '" + std::string(flag) + "'");
    }
    if (a.mode != "sections" && a.mode != "waiters" && a.mode != "probe" && a.mode != "elect")
        usage("--mode is sections, waiters, probe or elect");
    if (a.nodes.empty() || a.keys.empty() || (a.mode == "sections" && a.resource_port == 0))
        usage("--nodes, --keys and (in mode sections) --resource-port are required");
    if (a.waiters < 1)
        usage("--waiters wants at least 1");
    return a;
}

// Nanoseconds on CLOCK_MONOTONIC, which all processes of the machine share. steady_clock is
// that clock with libstdc++; reading it directly makes the cross-process comparison explicit.
std::int64_t monotonic_ns()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A steady_clock time point (a guard's until()) on the same scale as monotonic_ns().
std::int64_t to_monotonic_ns(std::chrono::steady_clock::time_point t)
{
    const auto delta = t - std::chrono::steady_clock::now();
    return monotonic_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(delta).count();
}

outcome classify(const boost::system::error_code& ec)
{
    if (!ec)
        return outcome::ok;
    return ec == redlock::error::stale_token ? outcome::stale : outcome::error;
}

long long counter_value(const std::optional<std::string>& v)
{
    if (!v)
        return 0;
    long long n = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size())
        throw std::runtime_error("resource counter holds '" + *v + "', not a number");
    return n;
}

struct totals
{
    long sections = 0;
    long acquire_failures = 0;
};

asio::awaitable<void> pause_for(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

// The critical section, run while `g` holds `key`; it stops itself if `stop` (armed before
// the acquisition began). Returns its log line.
asio::awaitable<redlock::faults::section> critical_section(const arguments& a,
                                                           redlock::fenced_store& store,
                                                           const redlock::guard& g,
                                                           const std::string& key, bool stop)
{
    redlock::faults::section s;
    s.key = key;
    s.token = g.fencing_token();
    s.owner = g.value();
    s.until_ns = to_monotonic_ns(g.until());
    s.start_ns = monotonic_ns();

    auto [read_ec, value] =
        co_await store.async_read("fenced:" + key, g, asio::as_tuple(asio::use_awaitable));
    s.read = classify(read_ec);
    if (read_ec && s.read == outcome::error)
        emit("fence_error op=read key=" + key + " why=" + one_line(store.last_error()));
    // The unfenced twin: the same read-modify-write with nothing but the lock to protect it.
    const std::string shadow_key = "shadow:" + key;
    const long long shadow = counter_value(redlock::test::redis_get(a.resource_port, shadow_key));

    if (stop) {
        stop_armed = 0;
        emit("stop key=" + key + " token=" + std::to_string(s.token) + " owner=" + s.owner +
             " start=" + std::to_string(s.start_ns) + " until=" + std::to_string(s.until_ns));
        ::raise(SIGSTOP);  // returns after the driver's SIGCONT
    } else {
        co_await pause_for(a.work);  // the work that makes the read-modify-write racy
    }

    if (s.read == outcome::ok) {
        auto [write_ec] =
            co_await store.async_write("fenced:" + key, std::to_string(counter_value(value) + 1), g,
                                       asio::as_tuple(asio::use_awaitable));
        s.write = classify(write_ec);
        if (write_ec && s.write == outcome::error)
            emit("fence_error op=write key=" + key + " why=" + one_line(store.last_error()));
    }
    redlock::test::redis_set(a.resource_port, shadow_key, std::to_string(shadow + 1));
    s.shadow_written = true;
    s.end_ns = monotonic_ns();
    if (a.auto_extend)  // the watchdog moved it on
        s.until_ns = to_monotonic_ns(g.until());
    co_return s;
}

asio::awaitable<totals> work(const arguments& a, redlock::client& client)
{
    auto ex = co_await asio::this_coro::executor;
    redlock::fenced_store store(
        ex, redlock::config::from_urls({"redis://127.0.0.1:" + std::to_string(a.resource_port)}));
    std::vector<redlock::mutex> mutexes;
    for (const auto& key : a.keys)
        // `wait` bounds one acquire, so that a worker stuck behind a held key still notices
        // the end of its run in time.
        mutexes.push_back(
            client.make_mutex(key, {.expiry = a.expiry,
                                    .wait = std::max<std::chrono::milliseconds>(a.expiry, 2s),
                                    .auto_extend = a.auto_extend,
                                    .fencing = true,
                                    .wait_for_replicas = a.wait_for_replicas}));
    std::mt19937 rng(a.seed);
    std::uniform_int_distribution<std::size_t> pick(0, a.keys.size() - 1);
    std::uniform_int_distribution<int> think_ms(0, 3);
    totals t;
    const auto deadline = std::chrono::steady_clock::now() + a.duration;
    while (std::chrono::steady_clock::now() < deadline && !end_requested) {
        const std::size_t i = pick(rng);
        const std::string& key = a.keys[i];
        const bool stop = stop_armed != 0;  // armed before this acquisition began
        auto [ec, g] = co_await mutexes[i].async_acquire(asio::as_tuple(asio::use_awaitable));
        if (ec) {
            ++t.acquire_failures;
            emit("acquire_failed key=" + key + " code=" + std::to_string(ec.value()) +
                 " why=" + one_line(ec.message()));
            // What each node answered, for the logs a failed scenario keeps.
            emit("acquire_report key=" + key + " why=" + one_line(g.last_report().to_string()));
            co_await pause_for(std::chrono::milliseconds(5 + think_ms(rng)));
            continue;
        }
        const auto s = co_await critical_section(a, store, g, key, stop);
        emit(redlock::faults::format_section(s));
        ++t.sections;
        if (g.lost())  // the watchdog found it gone from the node, or could not extend it
            emit("lost key=" + key + " token=" + std::to_string(s.token) +
                 " why=" + one_line(g.last_report().to_string()));
        auto [rel_ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        if (rel_ec)  // the lock expired or was lost in a fault: expected in some scenarios
            emit("release_failed key=" + key + " token=" + std::to_string(s.token) +
                 " at=" + std::to_string(monotonic_ns()) + " why=" + one_line(rel_ec.message()) +
                 "; " + one_line(g.last_report().to_string()));
        co_await pause_for(std::chrono::milliseconds(think_ms(rng)));
    }
    co_return t;
}

// Mode waiters: one of `a.waiters` coroutines, on `lock` (a mutex or a semaphore). It logs its
// sections; the counts go to `t`.
template <class Lock>
asio::awaitable<void> take_turns(const arguments& a, Lock lock, totals& t)
{
    const std::string& key = a.keys.front();
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> percent(0, 99);
    const auto deadline = std::chrono::steady_clock::now() + a.duration;
    while (std::chrono::steady_clock::now() < deadline && !end_requested) {
        // Before the acquire's first request: its join began later (checker.hpp).
        const std::int64_t call_ns = monotonic_ns();
        // One co_await per statement: g++ 12 runs both operands of a ?: of co_awaits.
        std::tuple<boost::system::error_code, redlock::guard> got;
        if constexpr (std::is_same_v<Lock, redlock::rw_mutex>) {
            if (percent(rng) < a.shared_percent)
                got = co_await lock.async_acquire_shared(asio::as_tuple(asio::use_awaitable));
            else
                got = co_await lock.async_acquire(asio::as_tuple(asio::use_awaitable));
        } else {
            got = co_await lock.async_acquire(asio::as_tuple(asio::use_awaitable));
        }
        auto& [ec, g] = got;
        if (ec) {
            ++t.acquire_failures;
            emit("acquire_failed key=" + key + " code=" + std::to_string(ec.value()) +
                 " why=" + one_line(ec.message()));
            continue;
        }
        redlock::faults::section s;
        s.key = key;
        s.owner = g.value();
        s.shared = g.shared();
        s.until_ns = to_monotonic_ns(g.until());
        s.start_ns = monotonic_ns();
        s.call_ns = call_ns;
        if (a.announce)
            emit("hold key=" + key + " owner=" + s.owner + " start=" + std::to_string(s.start_ns) +
                 " until=" + std::to_string(s.until_ns));
        co_await pause_for(a.work);
        s.end_ns = monotonic_ns();
        emit(redlock::faults::format_section(s));
        ++t.sections;
        auto [rel_ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        if (rel_ec)
            emit("release_failed key=" + key + " why=" + one_line(rel_ec.message()));
        // No pause: acquiring again at once is what lets one process keep the key to itself.
    }
}

// A lock per coroutine: each is an owner of its own, as separate threads of one program would
// be. The library's default retry delay, since that is what most callers run with.
asio::awaitable<void> take_turns(const arguments& a, redlock::client& client, totals& t)
{
    // A fair waiter's refreshes are attempts: `wait` alone bounds it, not `tries`.
    const redlock::options opts{
        .expiry = a.expiry,
        .tries = a.fair ? 1000 : redlock::options{}.tries,
        .wait = a.fair ? 10 * a.expiry : std::max<std::chrono::milliseconds>(a.expiry, 2s),
        .wait_for_replicas = a.wait_for_replicas,
        .fair = a.fair};
    if (a.permits > 0)
        co_await take_turns(a, client.make_semaphore(a.keys.front(), a.permits, opts), t);
    else if (a.shared_percent >= 0)
        co_await take_turns(a, client.make_rw_mutex(a.keys.front(), opts), t);
    else
        co_await take_turns(a, client.make_mutex(a.keys.front(), opts), t);
}

asio::awaitable<totals> waiters(const arguments& a, redlock::client& client)
{
    auto ex = co_await asio::this_coro::executor;
    totals t;
    int running = a.waiters;
    asio::steady_timer all_done(ex, std::chrono::steady_clock::time_point::max());
    std::exception_ptr failure;
    for (int i = 0; i < a.waiters; ++i)
        asio::co_spawn(ex, take_turns(a, client, t), [&](std::exception_ptr e) {
            if (e && !failure)
                failure = e;
            if (--running == 0)
                all_done.cancel();
        });
    while (running > 0)
        co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
    if (failure)
        std::rethrow_exception(failure);
    co_return t;
}

// Mode probe: connects, reports `connected` and waits for SIGUSR1 (the driver faults the
// nodes in between: they fail under a client that is already connected, not before it
// connects); then one attempt, reported; then the client stays up until SIGTERM or the
// duration.
asio::awaitable<totals> probe(const arguments& a, redlock::client& client)
{
    auto ex = co_await asio::this_coro::executor;
    asio::signal_set terminate(ex, SIGTERM);
    asio::signal_set go(ex, SIGUSR1);
    // Bounds the whole probe, should the driver never send its signals.
    asio::steady_timer limit(ex, a.duration);
    limit.async_wait([&](const boost::system::error_code& e) {
        if (!e) {
            go.cancel();
            terminate.cancel();
        }
    });
    {
        auto warm = client.make_mutex(a.keys.front() + ":connect", {.expiry = a.expiry});
        auto g = co_await warm.acquire();
        co_await g.release();
    }
    emit("connected");
    auto [go_ec, go_signal] = co_await go.async_wait(asio::as_tuple(asio::use_awaitable));
    if (go_ec)
        throw std::runtime_error("no SIGUSR1 within the duration");
    auto m = client.make_mutex(a.keys.front(),
                               {.expiry = a.expiry, .wait_for_replicas = a.wait_for_replicas});
    auto [ec, g] = co_await m.async_try_acquire(asio::as_tuple(asio::use_awaitable));
    emit("probe key=" + a.keys.front() + " acquired=" + (ec ? "0" : "1") +
         " code=" + std::to_string(ec.value()) + " why=" + one_line(ec.message()));
    totals t;
    if (ec)
        ++t.acquire_failures;
    else
        ++t.sections;
    co_await terminate.async_wait(asio::as_tuple(asio::use_awaitable));
    limit.cancel();
    if (g.owns_lock())
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));
    co_return t;
}

// ---- mode elect ----

// The leadership the candidate holds now, for the client's lock observer (log_extension).
const redlock::guard* leading = nullptr;

// The client's lock observer in mode elect: logs each of the watchdog's extensions of the
// leadership. It runs on the client's strand (this process's only thread) right after the
// extension moved the guard's validity on, so that a process killed later has logged it.
void log_extension(const redlock::lock_event& e)
{
    if (e.kind == redlock::lock_event_kind::extended && leading != nullptr)
        emit("extended term=" + std::to_string(leading->fencing_token()) +
             " until=" + std::to_string(to_monotonic_ns(leading->until())));
}

// Mode elect ends when `end` expires: after the duration, or at once on SIGTERM.
bool over(const asio::steady_timer& end)
{
    return end.expiry() <= std::chrono::steady_clock::now();
}

// The candidate: campaigns, leads for `a.work`, resigns, and again, until the end.
asio::awaitable<void> candidate(const arguments& a, redlock::election e, asio::steady_timer& end,
                                totals& t)
{
    using namespace asio::experimental::awaitable_operators;
    auto ex = co_await asio::this_coro::executor;
    const std::string proposal = "w" + std::to_string(a.id);
    while (!over(end)) {
        auto campaign = co_await (e.async_campaign(proposal, asio::as_tuple(asio::use_awaitable)) ||
                                  end.async_wait(asio::as_tuple(asio::use_awaitable)));
        if (campaign.index() == 1)
            break;  // the end came first: the campaign was cancelled and left the queue
        auto& [ec, g] = std::get<0>(campaign);
        if (ec) {
            ++t.acquire_failures;
            emit("campaign_failed code=" + std::to_string(ec.value()) +
                 " why=" + one_line(ec.message()) + "; " + one_line(g.last_report().to_string()));
            co_await pause_for(5ms);
            continue;
        }
        ++t.sections;
        const std::string term = std::to_string(g.fencing_token());
        emit(redlock::faults::format_lead({a.id,
                                           proposal,
                                           g.fencing_token(),
                                           monotonic_ns(),
                                           to_monotonic_ns(g.until()),
                                           {},
                                           {}}));
        leading = &g;
        asio::steady_timer hold(ex, a.work);
        auto held = co_await (hold.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                              g.async_wait_lost(asio::as_tuple(asio::use_awaitable)) ||
                              end.async_wait(asio::as_tuple(asio::use_awaitable)));
        leading = nullptr;
        if (held.index() == 1) {
            auto [lost_ec] = std::get<1>(held);
            emit((lost_ec == redlock::error::lost ? "lost term=" : "wait_lost_failed term=") +
                 term + " at=" + std::to_string(monotonic_ns()) + " why=" +
                 one_line(lost_ec.message()) + "; " + one_line(g.last_report().to_string()));
        }
        emit("resign term=" + term + " at=" + std::to_string(monotonic_ns()));
        auto [rel_ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        if (rel_ec)  // a lost leadership is gone from the nodes already
            emit("release_failed term=" + term + " why=" + one_line(rel_ec.message()));
    }
}

// The observer: each leader it sees, until the end.
asio::awaitable<void> watch_leaders(const arguments& a, redlock::election e,
                                    asio::steady_timer& end)
{
    using namespace asio::experimental::awaitable_operators;
    std::optional<redlock::leader> seen;
    while (!over(end)) {
        auto next = co_await (e.async_observe(seen, asio::as_tuple(asio::use_awaitable)) ||
                              end.async_wait(asio::as_tuple(asio::use_awaitable)));
        if (next.index() == 1)
            break;
        auto& [ec, now] = std::get<0>(next);
        if (ec) {
            emit("observe_failed code=" + std::to_string(ec.value()) +
                 " why=" + one_line(ec.message()));
            co_await pause_for(a.expiry / 4);  // not a loop of failures as fast as it can
            continue;
        }
        seen = now;
        emit(redlock::faults::format_view(
            {a.id, now ? std::optional<std::string>(now->value) : std::nullopt, now ? now->term : 0,
             monotonic_ns()}));
    }
}

asio::awaitable<totals> elect(const arguments& a, redlock::client& client)
{
    using namespace asio::experimental::awaitable_operators;
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer end(ex, a.duration);
    asio::signal_set terminate(ex, SIGTERM);
    terminate.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec)  // the waits on `end` complete, and those begun later complete at once
            end.expires_at(std::chrono::steady_clock::now());
    });
    // An election is a fair mutex with fencing and the watchdog, whatever the options say.
    auto e = client.make_election(a.keys.front(),
                                  {.expiry = a.expiry, .wait_for_replicas = a.wait_for_replicas});
    totals t;
    co_await (candidate(a, e, end, t) && watch_leaders(a, e, end));
    terminate.cancel();
    co_return t;
}

}  // namespace

int main(int argc, char** argv)
{
    const arguments a = parse(argc, argv);
    struct sigaction sa
    {
    };
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;  // blocking reads of the shadow GET/SET must not see EINTR
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, nullptr);
    if (a.mode != "probe" && a.mode != "elect") {  // these wait for SIGTERM with a signal_set
        sa.sa_handler = on_sigterm;
        ::sigaction(SIGTERM, &sa, nullptr);
    }

    asio::io_context io;
    std::optional<totals> result;
    std::exception_ptr failure;
    try {
        redlock::config cfg = redlock::config::from_urls(a.nodes);
        // Nodes come back within milliseconds here; the default 2 s cap on the reconnect
        // pause would keep a restarted node out of most of a short scenario.
        cfg.reconnect_backoff_max = 250ms;
        if (a.connect_timeout.count() > 0)
            cfg.connect_timeout = a.connect_timeout;
        if (a.mode == "elect")
            cfg.observer = log_extension;
        redlock::client client(io.get_executor(), std::move(cfg));
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                try {
                    if (a.mode == "waiters")
                        result = co_await waiters(a, client);
                    else if (a.mode == "probe")
                        result = co_await probe(a, client);
                    else if (a.mode == "elect")
                        result = co_await elect(a, client);
                    else
                        result = co_await work(a, client);
                } catch (...) {
                    failure = std::current_exception();
                }
                co_await client.async_shutdown(asio::as_tuple(asio::use_awaitable));
            },
            [&](std::exception_ptr e) {
                if (e && !failure)
                    failure = e;
            });
        // Only now may the driver send SIGUSR1: its default action would kill the process.
        emit("ready id=" + std::to_string(a.id) + " pid=" + std::to_string(::getpid()));
        io.run();
    } catch (...) {
        failure = std::current_exception();
    }
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            emit("fatal why=" + one_line(e.what()));
        }
        return 1;
    }
    emit("done sections=" + std::to_string(result ? result->sections : 0) +
         " acquire_failures=" + std::to_string(result ? result->acquire_failures : 0));
    return 0;
}
