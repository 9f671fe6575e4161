// SPDX-License-Identifier: BSL-1.0
// The read-write lock against real redis-servers: readers overlap, a writer is alone, a
// waiting writer keeps new readers out, dead holders' entries expire, releases wake waiters of
// both modes, extend and valid per guard, the clean-up of failed and cancelled attempts,
// fencing for writers, a cluster and a Sentinel node, and the blocking facade.

#include <redlock/blocking.hpp>

#include "fixture.hpp"
#include "sentinel_deployment.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <shared_mutex>
#include <sstream>

namespace redlock::test {
namespace {

using boost::system::error_code;
using outcome = std::tuple<error_code, redlock::guard>;

long long server_clock_ms(std::uint16_t port)
{
    std::istringstream in(redis_command(port, {"TIME"}));
    long long seconds = 0;
    long long micros = 0;
    in >> seconds >> micros;
    return seconds * 1000 + micros / 1000;
}

// How many entries (readers, writer, intent) the lock has on a node.
long long entries_on(std::uint16_t port, const std::string& key)
{
    return std::stoll(redis_command(port, {"HLEN", key}));
}

bool has_entry(std::uint16_t port, const std::string& key, const std::string& field)
{
    return redis_command(port, {"HEXISTS", key, field}) == "1";
}

// An entry of an owner that died holding it (`field` is mode:value), expiring `ttl_ms` from
// now by the server's clock, written as the acquire script writes it.
void dead_entry(std::uint16_t port, const std::string& key, const std::string& field,
                long long ttl_ms)
{
    redis_command(port, {"HSET", key, field, std::to_string(server_clock_ms(port) + ttl_ms)});
    redis_command(port, {"PEXPIRE", key, std::to_string(ttl_ms)});
}

asio::awaitable<outcome> take(redlock::rw_mutex m, bool shared, bool once)
{
    // One co_await per statement: g++ 12 evaluates both arms of a conditional with co_await.
    auto token = asio::as_tuple(asio::use_awaitable);
    if (shared && once) {
        co_return co_await m.async_try_acquire_shared(token);
    }
    if (shared) {
        co_return co_await m.async_acquire_shared(token);
    }
    if (once) {
        co_return co_await m.async_try_acquire(token);
    }
    co_return co_await m.async_acquire(token);
}

// An acquisition started in the background, whose end a test waits for.
struct pending_acquire
{
    std::optional<error_code> ec;
    redlock::guard g;
    steady::time_point at{};

    void start(asio::io_context& io, redlock::rw_mutex m, bool shared,
               const asio::cancellation_slot& slot = {})
    {
        asio::co_spawn(
            io,
            [this, m, shared]() -> asio::awaitable<void> {
                auto [e, got] = co_await take(m, shared, false);
                g = std::move(got);
                at = steady::now();
                ec = e;
            },
            asio::bind_cancellation_slot(slot, asio::detached));
    }
};

// Readers share; a writer waits for them, keeping new readers out meanwhile, and gets the lock
// at once when the last reader leaves (its retry delay is 20 s); then it is alone.
void readers_share_and_a_waiting_writer_comes_next(const std::vector<std::string>& urls,
                                                   const std::vector<std::uint16_t>& ports)
{
    asio::io_context io;
    redlock::client readers(io.get_executor(), config::from_urls(urls));
    redlock::client writers(io.get_executor(), config::from_urls(urls));
    auto r = readers.make_rw_mutex("prices", {.expiry = 10s});
    auto w = writers.make_rw_mutex("prices", {.expiry = 10s, .tries = 10, .retry_delay = 20s});
    BOOST_TEST(r.name() == "prices");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard a = co_await r.acquire_shared();
        redlock::guard b = co_await r.try_acquire_shared();
        BOOST_TEST((a.shared() && b.shared()));
        BOOST_TEST(a.value() != b.value());
        // A majority granted each; the last node's grant may still be on its way.
        BOOST_TEST(co_await settles([&] {
            for (std::uint16_t port : ports) {
                if (!has_entry(port, "prices", "r:" + a.value()) ||
                    entries_on(port, "prices") != 2) {
                    return false;
                }
            }
            return true;
        }));
        auto [refused, none] = co_await take(w, false, true);
        BOOST_TEST(refused == redlock::error::taken);
        BOOST_TEST(!none.owns_lock());
        BOOST_TEST(entries_on(ports[0], "prices") == 2);  // a try records no intent

        pending_acquire writer;
        writer.start(io, w, false);
        // Its intent is there on every node once its first attempt was refused.
        BOOST_TEST(co_await settles([&] {
            for (std::uint16_t port : ports) {
                if (entries_on(port, "prices") != 3) {
                    return false;
                }
            }
            return true;
        }));
        auto [kept_out, nothing] = co_await take(r, true, true);
        BOOST_TEST(kept_out == redlock::error::taken);
        BOOST_TEST(!writer.ec.has_value());

        co_await a.release();
        co_await pause_for(100ms);
        BOOST_TEST(!writer.ec.has_value());  // b still reads
        const auto released = steady::now();
        co_await b.release();
        BOOST_TEST(co_await settles([&] { return writer.ec.has_value(); }, 5s));
        BOOST_TEST(!*writer.ec);
        BOOST_TEST((writer.at - released < 2s));
        BOOST_TEST(writer.g.owns_lock());
        BOOST_TEST(!writer.g.shared());
        // The writer's entry alone on every node: its intent went when it got the lock.
        BOOST_TEST(co_await settles([&] {
            for (std::uint16_t port : ports) {
                if (entries_on(port, "prices") != 1 ||
                    !has_entry(port, "prices", "w:" + writer.g.value())) {
                    return false;
                }
            }
            return true;
        }));
        auto [no_reader, g1] = co_await take(r, true, true);
        BOOST_TEST(no_reader == redlock::error::taken);
        auto [no_writer, g2] = co_await take(r, false, true);
        BOOST_TEST(no_writer == redlock::error::taken);
        co_await writer.g.release();
        BOOST_TEST(co_await settles([&] {
            for (std::uint16_t port : ports) {
                if (redis_command(port, {"EXISTS", "prices"}) != "0") {
                    return false;
                }
            }
            return true;
        }));
        redlock::guard again = co_await r.try_acquire_shared();
        BOOST_TEST(again.owns_lock());
        co_await again.release();
        co_return 0;
    }());
}

std::vector<std::uint16_t> ports_of(const redis_cluster& nodes)
{
    std::vector<std::uint16_t> ports;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        ports.push_back(nodes[i].port());
    }
    return ports;
}

BOOST_AUTO_TEST_SUITE(rw_mutex)

BOOST_AUTO_TEST_CASE(on_one_server_readers_share_and_a_waiting_writer_comes_next)
{
    redis_cluster nodes(1);
    readers_share_and_a_waiting_writer_comes_next(nodes.urls(), ports_of(nodes));
}

BOOST_AUTO_TEST_CASE(over_three_masters_readers_share_and_a_waiting_writer_comes_next)
{
    redis_cluster nodes(3);
    readers_share_and_a_waiting_writer_comes_next(nodes.urls(), ports_of(nodes));
}

BOOST_AUTO_TEST_CASE(a_writer_excludes_writers_and_readers_wait_for_it)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client one(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client two(io.get_executor(), config::from_urls(nodes.urls()));
    auto held = one.make_rw_mutex("report");
    // Only a wake-up lets the reader in before its retry delay of 20 s.
    auto waiting = two.make_rw_mutex("report", {.tries = 10, .retry_delay = 20s});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await held.acquire();
        BOOST_TEST(!g.shared());
        auto [other_writer, none] = co_await take(waiting, false, true);
        BOOST_TEST(other_writer == redlock::error::taken);
        BOOST_TEST(waiting.last_report().nodes.at(0).status == node_status::taken);
        pending_acquire reader;
        reader.start(io, waiting, true);
        co_await pause_for(300ms);
        BOOST_TEST(!reader.ec.has_value());
        for (std::size_t i = 0; i < 3; ++i) {
            BOOST_TEST(entries_on(nodes[i].port(), "report") == 1);  // the writer's alone
        }
        const auto released = steady::now();
        co_await g.release();
        BOOST_TEST(co_await settles([&] { return reader.ec.has_value(); }, 5s));
        BOOST_TEST(!*reader.ec);
        BOOST_TEST((reader.at - released < 2s));
        BOOST_TEST(reader.g.shared());
        co_await reader.g.release();
        co_return 0;
    }());
}

// The retry delay of a waiter whose wake-up a test is about: 1 ms after its first attempt, so
// that it has joined its client's line of waiters (which it does after its first attempt's
// clean-up) once its second attempt is cleaned up; 20 s after that, which only a wake-up
// cuts short.
std::chrono::milliseconds woken_or_long(int attempt)
{
    return attempt == 1 ? 1ms : 20s;
}

// One client: while its writer holds, four of its readers wait, each refused twice and in its
// long retry pause. The writer's release may let them all in together, so it wakes every one
// of them, not only the first in the client's line.
BOOST_AUTO_TEST_CASE(a_writers_release_wakes_every_waiting_reader_of_the_client)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto m = c.make_rw_mutex("ledger", {.tries = 10, .retry_delay = woken_or_long});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        std::vector<long> before;
        for (std::size_t i = 0; i < 3; ++i) {
            before.push_back(scripts_run(nodes[i].port()));
        }
        std::array<pending_acquire, 4> readers;
        for (pending_acquire& r : readers) {
            r.start(io, m, true);
        }
        // Every reader's two attempts were refused on every node (so none was cleaned up).
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < 3; ++i) {
                if (scripts_run(nodes[i].port()) - before[i] < 8) {
                    return false;
                }
            }
            return true;
        }));
        const auto released = steady::now();
        co_await g.release();
        const auto all_granted = [&] {
            return std::all_of(readers.begin(), readers.end(),
                               [](const pending_acquire& r) { return r.ec.has_value(); });
        };
        BOOST_TEST(co_await settles(all_granted, 2s));
        for (pending_acquire& r : readers) {
            BOOST_TEST((r.ec && !*r.ec));
            BOOST_TEST(r.g.shared());
            BOOST_TEST((r.at - released < 2s));
        }
        for (pending_acquire& r : readers) {
            co_await r.g.release();
        }
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(dead_holders_entries_stop_blocking_after_their_expiry)
{
    redis_cluster nodes(3);
    for (std::size_t i = 0; i < 3; ++i) {
        dead_entry(nodes[i].port(), "index", "r:crashed-reader", 700);
    }
    const auto died = steady::now();
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto m = c.make_rw_mutex("index", {.expiry = 5s, .tries = 200, .retry_delay = 20ms});
    auto [taken, none] = run(io, take(m, false, true));
    BOOST_TEST(taken == redlock::error::taken);
    auto [ec, acquired] = run(io, take(m, false, false));
    BOOST_TEST_REQUIRE(!ec);
    // A variable, not a structured binding, so that the coroutine below may capture it.
    redlock::guard g = std::move(acquired);
    // Not before the dead reader's expiry on the servers (less a margin for the writes).
    BOOST_TEST((steady::now() - died >= 600ms));
    run(io, [&]() -> asio::awaitable<int> {
        co_await g.release();
        // A writer that died waiting: its intent keeps readers out until it expires.
        for (std::size_t i = 0; i < 3; ++i) {
            dead_entry(nodes[i].port(), "index", "i:crashed-writer", 700);
        }
        const auto gone = steady::now();
        auto [kept_out, nothing] = co_await take(m, true, true);
        BOOST_TEST(kept_out == redlock::error::taken);
        redlock::guard r = co_await m.acquire_shared();
        BOOST_TEST((steady::now() - gone >= 600ms));
        co_await r.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_reader_of_a_client_that_stopped_blocks_a_writer_only_until_its_expiry)
{
    redis_cluster nodes(3);
    asio::io_context dead_io;  // stops running: the process that held the lock died
    redlock::client dead(dead_io.get_executor(), config::from_urls(nodes.urls()));
    auto [dead_ec, dead_reader] =
        run(dead_io, take(dead.make_rw_mutex("feed", {.expiry = 800ms}), true, false));
    BOOST_TEST_REQUIRE(!dead_ec);
    // Its guard is never released: nothing runs dead_io again.
    asio::io_context io;
    for (std::size_t i = 0; i < 3; ++i) {
        // The last node's grant may still be on its way (its request was written).
        BOOST_TEST(eventually([&] { return entries_on(nodes[i].port(), "feed") == 1; }));
    }
    const auto held = steady::now();
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto w = c.make_rw_mutex("feed", {.tries = 500, .retry_delay = 10ms});
    auto [ec, acquired] = run(io, take(w, false, false));
    BOOST_TEST_REQUIRE(!ec);
    redlock::guard g = std::move(acquired);  // captured below, so not a structured binding
    BOOST_TEST((steady::now() - held >= 600ms));
    run(io, [&]() -> asio::awaitable<int> {
        co_await g.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(extend_and_valid_are_per_guard)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto m = c.make_rw_mutex("catalog", {.expiry = 2s});
    const auto expiry_of = [&](const redlock::guard& g) {
        return std::stoll(redis_command(nodes[0].port(), {"HGET", "catalog", "r:" + g.value()}));
    };
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard a = co_await m.acquire_shared();
        redlock::guard b = co_await m.acquire_shared();
        // Node 0 may be the one whose grant was still on its way.
        BOOST_TEST_REQUIRE(
            co_await settles([&] { return entries_on(nodes[0].port(), "catalog") == 2; }));
        const long long a_before = expiry_of(a);
        const long long b_before = expiry_of(b);
        co_await pause_for(100ms);
        const auto until = a.until();
        co_await a.extend();
        BOOST_TEST((a.until() > until));
        BOOST_TEST(expiry_of(a) >= a_before + 100);
        BOOST_TEST(expiry_of(b) == b_before);
        BOOST_TEST(co_await a.valid());
        BOOST_TEST(co_await b.valid());
        // b's entry vanishes from two nodes: b is no longer held by a majority, a still is.
        redis_command(nodes[0].port(), {"HDEL", "catalog", "r:" + b.value()});
        redis_command(nodes[1].port(), {"HDEL", "catalog", "r:" + b.value()});
        BOOST_TEST(!(co_await b.valid()));
        auto [ec] = co_await b.async_extend(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::extend_failed);
        BOOST_TEST(co_await a.valid());
        auto [released] = co_await b.async_release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(released == redlock::error::not_held);
        co_await a.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(the_watchdog_extends_only_its_own_entries)
{
    redis_cluster nodes(3);
    dead_entry(nodes[0].port(), "ledger", "r:other-process", 400);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto kept = c.make_rw_mutex("ledger", {.expiry = 300ms, .auto_extend = true});
    auto w = c.make_rw_mutex("ledger", {.expiry = 300ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await kept.acquire_shared();
        co_await pause_for(900ms);
        BOOST_TEST(g.owns_lock());
        BOOST_TEST(co_await g.valid());
        // The other process's reader expired on its own; ours was extended.
        const auto expiry = [&](const std::string& field) {
            return std::stoll(redis_command(nodes[0].port(), {"HGET", "ledger", field}));
        };
        const long long now = server_clock_ms(nodes[0].port());
        BOOST_TEST(expiry("r:other-process") <= now);
        BOOST_TEST(expiry("r:" + g.value()) > now);
        auto [ec, none] = co_await take(w, false, true);
        BOOST_TEST(ec == redlock::error::taken);
        co_await g.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_writer_that_gives_up_or_is_cancelled_leaves_no_entry_nor_intent)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto r = c.make_rw_mutex("orders", {.expiry = 10s});
    auto gives_up = c.make_rw_mutex("orders", {.expiry = 10s, .tries = 3, .retry_delay = 30ms});
    auto cancelled = c.make_rw_mutex("orders", {.expiry = 10s, .retry_delay = 5s});
    const auto only_the_reader = [&] {
        for (std::size_t i = 0; i < 3; ++i) {
            if (entries_on(nodes[i].port(), "orders") != 1) {
                return false;
            }
        }
        return true;
    };
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard reader = co_await r.acquire_shared();
        auto [ec, none] = co_await take(gives_up, false, false);
        BOOST_TEST(ec == redlock::error::taken);
        BOOST_TEST(gives_up.last_report().attempts == 3);
        BOOST_TEST(co_await settles(only_the_reader));
        // New readers are welcome again.
        redlock::guard second = co_await r.try_acquire_shared();
        co_await second.release();

        asio::cancellation_signal cancel;
        pending_acquire writer;
        writer.start(io, cancelled, false, cancel.slot());
        BOOST_TEST(co_await settles([&] { return entries_on(nodes[0].port(), "orders") == 2; }));
        cancel.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await settles([&] { return writer.ec.has_value(); }, 2s));
        BOOST_TEST((writer.ec == asio::error::operation_aborted));
        BOOST_TEST(co_await settles(only_the_reader));
        redlock::guard third = co_await r.try_acquire_shared();
        co_await third.release();
        co_await reader.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_failed_attempt_is_taken_back_also_on_a_node_that_timed_out)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto m = c.make_rw_mutex("stalled", {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard warm = co_await m.acquire();  // connections and scripts ready
        co_await warm.release();
        // Node 2 answered the release too: a request of it still pending when the node stops
        // would time out during the attempt, and the node would get nothing new (not even the
        // clean-up) until it answers.
        BOOST_TEST(co_await settles([&] {
            const node_counters n = c.node_counters().at(2);
            return n.requests == n.replies + n.errors + n.timeouts + n.abandoned;
        }));
        co_return 0;
    }());
    // Another writer holds two nodes: the attempt gets one node, and node 2 stalls.
    dead_entry(nodes[0].port(), "stalled", "w:other", 10000);
    dead_entry(nodes[1].port(), "stalled", "w:other", 10000);
    nodes[2].pause();
    auto [ec, none] = run(io, take(m, true, true));
    BOOST_TEST(ec == redlock::error::taken);
    BOOST_TEST(m.last_report(true).nodes.at(2).status == node_status::timed_out);
    nodes[2].resume();
    // The reader's entry on node 2, set once it resumed, is deleted by the clean-up behind it.
    const bool gone = run(io, settles([&] {
                              return redis_command(nodes[2].port(), {"EXISTS", "stalled"}) == "0";
                          }));
    BOOST_TEST(gone, redis_command(nodes[2].port(), {"HGETALL", "stalled"}));
}

BOOST_AUTO_TEST_CASE(writers_get_growing_fencing_tokens_and_readers_none)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto m = c.make_rw_mutex("account", {.fencing = true});
    BOOST_TEST(m.options().fencing);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard first = co_await m.acquire();
        const std::uint64_t t1 = first.fencing_token();
        BOOST_TEST(t1 > 0u);
        co_await first.release();
        redlock::guard reader = co_await m.acquire_shared();
        BOOST_TEST(reader.fencing_token() == 0u);
        co_await reader.release();
        redlock::guard second = co_await m.acquire();
        BOOST_TEST(second.fencing_token() > t1);
        co_await second.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(options_an_entry_cannot_have_are_refused)
{
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({"redis://127.0.0.1:1"}));
    BOOST_CHECK_THROW(c.make_rw_mutex("x", {.reentrant = true}), boost::system::system_error);
    redlock::options recreate;
    recreate.set_nx_on_extend = true;
    BOOST_CHECK_THROW(c.make_rw_mutex("x", recreate), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_rw_mutex(""), boost::system::system_error);
    // A fair read-write lock does not exist: options::fair is refused, not ignored.
    BOOST_CHECK_EXCEPTION(c.make_rw_mutex("x", {.fair = true}), boost::system::system_error,
                          [](const boost::system::system_error& e) {
                              return e.code() == redlock::error::invalid_argument;
                          });
    BOOST_CHECK_NO_THROW(c.make_rw_mutex("x", {.fencing = true}));
}

BOOST_AUTO_TEST_CASE(a_cluster_node_keeps_every_entry_in_the_names_slot)
{
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    auto m = c.make_rw_mutex("dashboards", {.fencing = true});
    const auto master = d.owner_of_slot(cluster_deployment::slot_of("dashboards"));
    BOOST_TEST_REQUIRE(master.has_value());
    const std::uint16_t port = d[*master].port();
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard a = co_await m.acquire_shared();
        redlock::guard b = co_await m.acquire_shared();
        BOOST_TEST(entries_on(port, "dashboards") == 2);
        auto [ec, none] = co_await take(m, false, true);
        BOOST_TEST(ec == redlock::error::taken);
        co_await a.release();
        co_await b.release();
        redlock::guard w = co_await m.acquire();
        BOOST_TEST(w.fencing_token() > 0u);
        BOOST_TEST(has_entry(port, "dashboards", "w:" + w.value()));
        co_await w.release();
        BOOST_TEST(redis_command(port, {"EXISTS", "dashboards"}) == "0");
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_sentinel_node_keeps_the_entries_on_its_master)
{
    sentinel_deployment d;
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    auto m = c.make_rw_mutex("exports");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard r = co_await m.acquire_shared();
        BOOST_TEST(has_entry(d.master.port(), "exports", "r:" + r.value()));
        auto [ec, none] = co_await take(m, false, true);
        BOOST_TEST(ec == redlock::error::taken);
        co_await r.release();
        redlock::guard w = co_await m.acquire();
        BOOST_TEST(has_entry(d.master.port(), "exports", "w:" + w.value()));
        co_await w.release();
        BOOST_TEST(entries_on(d.master.port(), "exports") == 0);
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(with_lock_runs_work_under_the_exclusive_lock)
{
    redis_cluster nodes(1);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto m = c.make_rw_mutex("settings");
    const bool exclusive =
        run(io, redlock::with_lock(m, [&](redlock::guard& g) -> asio::awaitable<bool> {
                co_return g.owns_lock() && !g.shared() &&
                    has_entry(nodes[0].port(), "settings", "w:" + g.value());
            }));
    BOOST_TEST(exclusive);
    BOOST_TEST(redis_command(nodes[0].port(), {"EXISTS", "settings"}) == "0");
}

BOOST_AUTO_TEST_CASE(the_blocking_facade_shares_reads_and_excludes_writes)
{
    redis_cluster nodes(1);
    blocking::client c(config::from_urls(nodes.urls()));
    blocking::rw_mutex m = c.make_rw_mutex("blocking:table", {.expiry = 10s});
    BOOST_TEST(m.name() == "blocking:table");
    {
        std::shared_lock read(m);
        BOOST_TEST(m.owns_shared());
        BOOST_TEST(!m.owns_lock());
        // Exclusive from this thread would wait for itself.
        BOOST_CHECK_THROW(m.lock(), boost::system::system_error);
        std::thread other([&] {
            BOOST_TEST(!m.try_lock());
            const auto before = steady::now();
            BOOST_TEST(!m.try_lock_for(150ms));
            BOOST_TEST((steady::now() - before >= 150ms));
            std::shared_lock also(m);  // readers share
            BOOST_TEST(entries_on(nodes[0].port(), "blocking:table") == 2);
        });
        other.join();
    }
    BOOST_TEST(entries_on(nodes[0].port(), "blocking:table") == 0);
    {
        std::unique_lock write(m);
        BOOST_TEST(m.owns_lock());
        std::thread other([&] {
            BOOST_TEST(!m.try_lock_shared());
            BOOST_TEST(!m.try_lock_shared_until(std::chrono::system_clock::now() + 50ms));
        });
        other.join();
    }
    BOOST_TEST(m.try_lock_shared_for(1s));
    m.unlock();  // not held exclusively: nothing
    BOOST_TEST(m.owns_shared());
    m.unlock_shared();
    BOOST_TEST(redis_command(nodes[0].port(), {"EXISTS", "blocking:table"}) == "0");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
