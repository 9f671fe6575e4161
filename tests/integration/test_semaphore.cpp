// SPDX-License-Identifier: BSL-1.0
// The semaphore against real redis-servers: at most `permits` holders on one server and over
// several masters, permits of dead holders coming back, wake-ups, the limit's agreement,
// extend and valid per permit, the clean-up of a failed attempt, a cluster and a Sentinel node.

#include <redlock/blocking.hpp>

#include "fixture.hpp"
#include "sentinel_deployment.hpp"

#include "protocol/script_table.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <random>
#include <sstream>

namespace redlock::test {
namespace {

using boost::system::error_code;

long long holders_on(std::uint16_t port, const std::string& key)
{
    return std::stoll(redis_command(port, {"ZCARD", key}));
}

// A holder that died holding a permit: its entry, expiring `ttl_ms` from now by the server's
// clock, and the limit it used, written as the acquire script writes them.
void dead_holder(std::uint16_t port, const std::string& key, const std::string& value,
                 long long ttl_ms, int permits)
{
    const long long expiry = server_ms(port) + ttl_ms;
    redis_command(port, {"ZADD", key, std::to_string(expiry), value});
    redis_command(port, {"SET", "redlock:limit:" + key, std::to_string(permits), "PXAT",
                         std::to_string(expiry)});
    redis_command(port, {"PEXPIREAT", key, std::to_string(expiry)});
}

asio::awaitable<std::tuple<error_code, redlock::guard>> try_take(redlock::semaphore s,
                                                                 bool once = true)
{
    if (once) {
        co_return co_await s.async_try_acquire(asio::as_tuple(asio::use_awaitable));
    }
    co_return co_await s.async_acquire(asio::as_tuple(asio::use_awaitable));
}

// `workers` coroutines on `sems` (in turn) each take a permit `rounds` times, hold it a
// moment and give it back; returns the most holders seen at once.
int most_at_once(asio::io_context& io, std::vector<redlock::semaphore> sems, int workers,
                 int rounds)
{
    int inside = 0;
    int most = 0;
    int done = 0;
    for (int w = 0; w < workers; ++w) {
        redlock::semaphore s = sems[static_cast<std::size_t>(w) % sems.size()];
        asio::co_spawn(
            io,
            [&, s]() mutable -> asio::awaitable<void> {
                asio::steady_timer hold(co_await asio::this_coro::executor);
                for (int r = 0; r < rounds; ++r) {
                    redlock::guard g = co_await s.acquire();
                    most = std::max(most, ++inside);
                    hold.expires_after(3ms);
                    co_await hold.async_wait(asio::use_awaitable);
                    --inside;
                    co_await g.release();
                }
                ++done;
            },
            asio::detached);
    }
    BOOST_TEST_REQUIRE(run(io, settles([&] { return done == workers; }, 60s), 70s));
    return most;
}

asio::awaitable<int> release(redlock::guard& g)
{
    co_await g.release();
    co_return 0;
}

// Many retries, each after a short random delay: contenders that split the nodes between
// them must not retry in step.
// Runs semaphore script `id` on `port` with the holders' key "s" and its limit, as the
// client does; the reply as redis_command gives it.
std::string script(std::uint16_t port, detail::script_id id, std::vector<std::string> args)
{
    std::vector<std::string> command{"EVAL", std::string(detail::script_of(id).text), "2", "s",
                                     "redlock:limit:s"};
    command.insert(command.end(), args.begin(), args.end());
    return redis_command(port, command);
}

options quick()
{
    return {.expiry = 5s, .tries = 1000, .retry_delay = [](int) {
                thread_local std::mt19937 engine{std::random_device{}()};
                return std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 20)(engine));
            }};
}

BOOST_AUTO_TEST_SUITE(semaphore)

BOOST_AUTO_TEST_CASE(the_scripts_count_live_permits_only_and_keep_one_limit)
{
    using detail::script_id;
    redis_server node;
    const std::uint16_t p = node.port();
    BOOST_TEST(script(p, script_id::semaphore_acquire, {"a", "10000", "1"}) == "1");
    BOOST_TEST(script(p, script_id::semaphore_acquire, {"b", "10000", "1"}) == "-1");
    // A retried request of the holder is granted again: the permit is already its own.
    BOOST_TEST(script(p, script_id::semaphore_acquire, {"a", "10000", "1"}) == "1");
    BOOST_TEST(holders_on(p, "s") == 1);
    // Another limit while holders are there: the code with both numbers, and nothing changes.
    BOOST_TEST(script(p, script_id::semaphore_acquire, {"c", "10000", "2"}) == "-2 1 2");
    BOOST_TEST(holders_on(p, "s") == 1);
    // Both keys expire with the last holder, by the server's clock.
    const long long ttl = redis_pttl(p, "s");
    BOOST_TEST((ttl > 9000 && ttl <= 10000));
    BOOST_TEST(std::abs(redis_pttl(p, "redlock:limit:s") - ttl) <= 5);

    BOOST_TEST(script(p, script_id::semaphore_check_extend, {"a"}) == "1");
    BOOST_TEST(script(p, script_id::semaphore_check_extend, {"b"}) == "0");
    BOOST_TEST(script(p, script_id::semaphore_check_extend, {"a", "60"}) == "1");
    BOOST_TEST(redis_pttl(p, "s") <= 60);  // the extension sets the new expiry, shorter here
    BOOST_TEST(
        eventually([&] { return script(p, script_id::semaphore_check_extend, {"a"}) == "0"; }));
    // The expired permit no longer counts, and its limit is forgotten with it.
    BOOST_TEST(script(p, script_id::semaphore_acquire, {"b", "10000", "3"}) == "1");
    BOOST_TEST(holders_on(p, "s") == 1);
    BOOST_TEST((redis_get(p, "redlock:limit:s") == "3"));
    // Release: 1 for a live permit, 0 for one that is not there; the last takes the limit.
    BOOST_TEST(script(p, script_id::semaphore_release, {"a"}) == "0");
    BOOST_TEST(script(p, script_id::semaphore_release, {"b"}) == "1");
    BOOST_TEST(redis_command(p, {"EXISTS", "s", "redlock:limit:s"}) == "0");
}

BOOST_AUTO_TEST_CASE(one_server_admits_permits_holders_and_a_release_lets_the_next_in)
{
    redis_cluster nodes(1);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::semaphore s = c.make_semaphore("gpu", 2, {.expiry = 10s});
    BOOST_TEST(s.name() == "gpu");
    BOOST_TEST(s.permits() == 2);
    BOOST_TEST(s.quorum() == 1u);
    run(io, [&]() -> asio::awaitable<int> {
        const auto before = steady::now();
        redlock::guard a = co_await s.acquire();
        redlock::guard b = co_await s.try_acquire();
        BOOST_TEST(a.owns_lock());
        BOOST_TEST(b.owns_lock());
        BOOST_TEST(a.value() != b.value());
        BOOST_TEST(a.name() == "gpu");
        BOOST_TEST((a.until() > steady::now() && a.until() <= before + 10s));
        BOOST_TEST(holders_on(nodes[0].port(), "gpu") == 2);
        BOOST_TEST((redis_get(nodes[0].port(), "redlock:limit:gpu") == "2"));
        // Each permit's expiry is the server's clock plus the expiry.
        const long long expiry =
            std::stoll(redis_command(nodes[0].port(), {"ZSCORE", "gpu", a.value()}));
        const long long now = server_ms(nodes[0].port());
        BOOST_TEST((expiry > now + 9000 && expiry <= now + 10000));

        auto [full, none] = co_await try_take(s);
        BOOST_TEST(full == redlock::error::taken);
        BOOST_TEST(!none.owns_lock());
        BOOST_TEST(s.last_report().nodes.at(0).status == node_status::taken);

        co_await a.release();
        BOOST_TEST(holders_on(nodes[0].port(), "gpu") == 1);
        auto [ec, c3] = co_await try_take(s);
        BOOST_TEST(!ec);
        BOOST_TEST(c3.owns_lock());
        co_await b.release();
        // with_lock runs work under a permit and gives it back.
        const int seen =
            co_await redlock::with_lock(s, [&](redlock::guard& g) -> asio::awaitable<int> {
                co_return static_cast<int>(holders_on(nodes[0].port(), "gpu")) +
                    (g.owns_lock() ? 10 : 0);
            });
        BOOST_TEST(seen == 12);
        co_await c3.release();
        // The last holder takes the limit with it.
        BOOST_TEST(redis_command(nodes[0].port(), {"EXISTS", "gpu", "redlock:limit:gpu"}) == "0");
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_key_prefix_goes_before_the_holders_and_the_limit)
{
    redis_cluster nodes(1);
    asio::io_context io;
    redlock::config cfg = config::from_urls(nodes.urls());
    cfg.key_prefix = "app:";
    redlock::client c(io.get_executor(), cfg);
    auto s = c.make_semaphore("gpu", 1);
    BOOST_TEST(s.name() == "gpu");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await s.acquire();
        BOOST_TEST(holders_on(nodes[0].port(), "app:gpu") == 1);
        BOOST_TEST((redis_get(nodes[0].port(), "app:redlock:limit:gpu") == "1"));
        BOOST_TEST(redis_command(nodes[0].port(), {"EXISTS", "gpu"}) == "0");
        co_await g.release();
        BOOST_TEST(redis_command(nodes[0].port(), {"EXISTS", "app:gpu"}) == "0");
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(never_more_holders_than_permits_over_three_and_five_masters)
{
    for (std::size_t n : {3u, 5u}) {
        BOOST_TEST_CONTEXT(n << " masters")
        {
            redis_cluster nodes(n);
            asio::io_context io;
            redlock::client one(io.get_executor(), config::from_urls(nodes.urls()));
            redlock::client two(io.get_executor(), config::from_urls(nodes.urls()));
            auto a = one.make_semaphore("pool", 2, quick());
            auto b = two.make_semaphore("pool", 2, quick());
            BOOST_TEST(a.quorum() == (n == 3 ? 3u : 4u));
            const int most = most_at_once(io, {a, b}, 8, 10);
            BOOST_TEST(most <= 2);
            BOOST_TEST(most == 2);  // both permits were used at once at some point
            for (std::size_t i = 0; i < n; ++i) {
                BOOST_TEST(eventually([&] {
                    return redis_command(nodes[i].port(), {"EXISTS", "pool"}) == "0";
                }));
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_majority_would_admit_a_third_holder_the_quorum_does_not)
{
    // Two permits on three nodes, held as a majority-quorum semaphore would let them be
    // held: one holder on nodes 0 and 1, another on 1 and 2. Node 1 is full; nodes 0 and 2
    // would make a third majority.
    redis_cluster nodes(3);
    dead_holder(nodes[0].port(), "api", "first", 10000, 2);
    dead_holder(nodes[1].port(), "api", "first", 10000, 2);
    dead_holder(nodes[1].port(), "api", "second", 10000, 2);
    dead_holder(nodes[2].port(), "api", "second", 10000, 2);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto s = c.make_semaphore("api", 2);
    BOOST_TEST(s.quorum() == 3u);
    auto [ec, g] = run(io, try_take(s));
    BOOST_TEST(ec == redlock::error::taken);
    BOOST_TEST(!g.owns_lock());
    const report r = s.last_report();
    BOOST_TEST(r.nodes.at(1).status == node_status::taken);
    // The clean-up took back what nodes 0 and 2 granted.
    BOOST_TEST(eventually([&] {
        return holders_on(nodes[0].port(), "api") == 1 && holders_on(nodes[2].port(), "api") == 1;
    }));
}

BOOST_AUTO_TEST_CASE(a_dead_holders_permit_comes_back_after_its_expiry)
{
    redis_cluster nodes(3);
    for (std::size_t i = 0; i < 3; ++i) {
        dead_holder(nodes[i].port(), "jobs", "crashed", 700, 1);
    }
    const auto died = steady::now();
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto s = c.make_semaphore("jobs", 1, {.expiry = 5s, .tries = 200, .retry_delay = 20ms});
    auto [taken, none] = run(io, try_take(s));
    BOOST_TEST(taken == redlock::error::taken);
    auto [ec, g] = run(io, try_take(s, false));
    BOOST_TEST_REQUIRE(!ec);
    // Not before the dead holder's expiry on the servers (less a margin for the time the
    // entries took to write).
    BOOST_TEST((steady::now() - died >= 600ms));
    BOOST_TEST(g.owns_lock());
    run(io, release(g));
}

BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_of_another_client)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client holder(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client waiter(io.get_executor(), config::from_urls(nodes.urls()));
    auto held = holder.make_semaphore("render", 2);
    // Only a wake-up can let the waiter in before its retry delay of 20 s.
    auto waited = waiter.make_semaphore("render", 2, {.tries = 3, .retry_delay = 20s});
    const std::string channel = "redlock:released:render";
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard a = co_await held.acquire();
        redlock::guard b = co_await held.acquire();
        std::vector<long> before;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            before.push_back(scripts_run(nodes[i].port()));
        }
        bool done = false;
        steady::time_point got{};
        redlock::guard g;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                g = co_await waited.acquire();
                got = steady::now();
                done = true;
            },
            asio::detached);
        // The waiter's first attempt was refused on every node (so it was not cleaned up), and
        // it listens for releases there: it is in its pause of 20 s.
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                if (scripts_run(nodes[i].port()) - before[i] < 1 ||
                    redis_command(nodes[i].port(), {"PUBSUB", "NUMSUB", channel}) !=
                        channel + " 1") {
                    return false;
                }
            }
            return true;
        }));
        BOOST_TEST(!done);
        const auto released = steady::now();
        co_await a.release();
        BOOST_TEST(co_await settles([&] { return done; }, 5s));
        BOOST_TEST((got - released < 2s));
        BOOST_TEST(g.owns_lock());
        co_await g.release();
        co_await b.release();
        co_return 0;
    }());
}

// Another client holds all three permits; three acquires of one client wait, each refused
// twice and in a retry pause of 20 s, which only a wake-up cuts short (the first pause, of
// 1 ms, leaves each in its client's line of waiters by its second attempt). The holder gives its
// permits back together: each release frees a permit, so each wakes one more waiter of the
// client, also while the ones woken before are still on their way.
BOOST_AUTO_TEST_CASE(each_permit_released_wakes_one_more_waiter_of_a_client)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client holder(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client waiter(io.get_executor(), config::from_urls(nodes.urls()));
    auto held = holder.make_semaphore("encode", 3);
    const auto woken_or_long = [](int attempt) { return attempt == 1 ? 1ms : 20s; };
    auto waited = waiter.make_semaphore("encode", 3, {.tries = 10, .retry_delay = woken_or_long});
    run(io, [&]() -> asio::awaitable<int> {
        std::vector<redlock::guard> permits;
        for (int i = 0; i < 3; ++i) {
            permits.push_back(co_await held.acquire());
        }
        std::vector<long> before;
        for (std::size_t i = 0; i < 3; ++i) {
            before.push_back(scripts_run(nodes[i].port()));
        }
        std::array<std::optional<redlock::guard>, 3> got;
        std::array<steady::time_point, 3> at{};
        for (std::size_t w = 0; w < 3; ++w) {
            asio::co_spawn(
                io,
                [&, w]() -> asio::awaitable<void> {
                    redlock::guard g = co_await waited.acquire();
                    at[w] = steady::now();
                    got[w] = std::move(g);
                },
                asio::detached);
        }
        // Every waiter's two attempts were refused on every node (so none was cleaned up).
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < 3; ++i) {
                if (scripts_run(nodes[i].port()) - before[i] < 6) {
                    return false;
                }
            }
            return true;
        }));
        const auto released = steady::now();
        for (redlock::guard& p : permits) {
            p.async_release(asio::detached);
        }
        BOOST_TEST(co_await settles(
            [&] {
                return std::all_of(got.begin(), got.end(),
                                   [](const auto& g) { return g.has_value(); });
            },
            2s));
        for (std::size_t w = 0; w < 3; ++w) {
            BOOST_TEST((got[w] && got[w]->owns_lock()));
            BOOST_TEST((at[w] - released < 2s));
        }
        for (auto& g : got) {
            if (g) {
                co_await g->release();
            }
        }
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_failed_attempt_is_taken_back_also_on_a_node_that_timed_out)
{
    // Two permits on three nodes: every node must grant. One is stopped while the attempt
    // runs, so the attempt fails; its request and the clean-up's wait in that node's socket,
    // and run in that order once it continues.
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto s = c.make_semaphore("stalled", 2, {.expiry = 10s, .tries = 1});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard warm = co_await s.acquire();  // connections and scripts ready
        co_await warm.release();
        co_return 0;
    }());
    nodes[2].pause();
    auto [ec, none] = run(io, try_take(s));
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST(!none.owns_lock());
    BOOST_TEST(s.last_report().nodes.at(2).status == node_status::timed_out);
    nodes[2].resume();
    // The entries expire in 10 s: one still there after the clean-up had its turn was left
    // behind.
    BOOST_TEST(run(io, settles([&] {
                       for (std::size_t i = 0; i < 3; ++i) {
                           if (holders_on(nodes[i].port(), "stalled") != 0) {
                               return false;
                           }
                       }
                       return true;
                   })));
}

BOOST_AUTO_TEST_CASE(a_cancelled_acquire_leaves_no_permit_behind)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto full = c.make_semaphore("cancelled", 1, {.expiry = 10s});
    auto waiting = c.make_semaphore("cancelled", 1, {.expiry = 10s, .retry_delay = 5s});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await full.acquire();
        asio::cancellation_signal cancel;
        std::optional<error_code> outcome;
        waiting.async_acquire(asio::bind_cancellation_slot(
            cancel.slot(), [&](error_code ec, redlock::guard) { outcome = ec; }));
        asio::steady_timer t(io, 200ms);
        co_await t.async_wait(asio::use_awaitable);
        BOOST_TEST(!outcome.has_value());
        cancel.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await settles([&] { return outcome.has_value(); }, 2s));
        BOOST_TEST((outcome == asio::error::operation_aborted));
        for (std::size_t i = 0; i < 3; ++i) {
            BOOST_TEST(holders_on(nodes[i].port(), "cancelled") == 1);
        }
        co_await g.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(other_permits_are_refused_naming_both_numbers)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client first(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client second(io.get_executor(), config::from_urls(nodes.urls()));
    auto two = first.make_semaphore("uploads", 2);
    auto three = second.make_semaphore("uploads", 3, {.tries = 5});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await two.acquire();
        for (bool once : {true, false}) {
            auto [ec, none] = co_await try_take(three, once);
            BOOST_TEST(ec == redlock::error::invalid_argument);
            BOOST_TEST(!none.owns_lock());
            const report r = three.last_report();
            BOOST_TEST(r.attempts == 1);  // not retried: no attempt can succeed
            std::size_t named = 0;
            for (const node_outcome& o : r.nodes) {
                if (o.code == node_errc::permits_mismatch) {
                    ++named;
                    BOOST_TEST(o.detail.find("use 2 permits, this client 3") != std::string::npos,
                               o.detail);
                }
            }
            BOOST_TEST(named >= 2u);
        }
        // Nothing of the refused client stays: every node holds the first client's permit only.
        BOOST_TEST(co_await settles([&] {
            for (std::size_t i = 0; i < 3; ++i) {
                if (holders_on(nodes[i].port(), "uploads") != 1) {
                    return false;
                }
            }
            return true;
        }));
        co_await g.release();
        // With the holders gone, the limit goes too: another number is fine now.
        redlock::guard h = co_await three.acquire();
        BOOST_TEST((redis_get(nodes[0].port(), "redlock:limit:uploads") == "3"));
        co_await h.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(permits_below_one_and_options_a_permit_cannot_have_are_refused)
{
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({"redis://127.0.0.1:1"}));
    for (std::ptrdiff_t permits : {0, -1}) {
        try {
            c.make_semaphore("x", permits);
            BOOST_FAIL("no exception");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == redlock::error::invalid_argument);
            BOOST_TEST(std::string(e.what()).find("at least 1 permit") != std::string::npos);
        }
    }
    BOOST_CHECK_THROW(c.make_semaphore("x", 2, {.reentrant = true}), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_semaphore("x", 2, {.fencing = true}), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_semaphore("", 2), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_semaphore("x", 2, {.expiry = 0ms}), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(extend_and_valid_are_per_permit)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto s = c.make_semaphore("batch", 2, {.expiry = 2s});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard a = co_await s.acquire();
        redlock::guard b = co_await s.acquire();
        const long long a_before =
            std::stoll(redis_command(nodes[0].port(), {"ZSCORE", "batch", a.value()}));
        const long long b_before =
            std::stoll(redis_command(nodes[0].port(), {"ZSCORE", "batch", b.value()}));
        asio::steady_timer t(io, 100ms);
        co_await t.async_wait(asio::use_awaitable);
        const auto until = a.until();
        co_await a.extend();
        BOOST_TEST((a.until() > until));
        BOOST_TEST(std::stoll(redis_command(nodes[0].port(), {"ZSCORE", "batch", a.value()})) >=
                   a_before + 100);
        BOOST_TEST(std::stoll(redis_command(nodes[0].port(), {"ZSCORE", "batch", b.value()})) ==
                   b_before);
        BOOST_TEST(co_await a.valid());
        BOOST_TEST(co_await b.valid());
        // b's permit vanishes from two nodes: b is no longer held by a quorum, a still is.
        redis_command(nodes[0].port(), {"ZREM", "batch", b.value()});
        redis_command(nodes[1].port(), {"ZREM", "batch", b.value()});
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

BOOST_AUTO_TEST_CASE(the_watchdog_keeps_a_permit_past_its_expiry)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    auto s = c.make_semaphore("long-job", 1, {.expiry = 300ms, .auto_extend = true});
    auto other = c.make_semaphore("long-job", 1, {.expiry = 300ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await s.acquire();
        asio::steady_timer t(io, 900ms);
        co_await t.async_wait(asio::use_awaitable);
        BOOST_TEST(g.owns_lock());
        BOOST_TEST(co_await g.valid());
        auto [ec, none] = co_await try_take(other);
        BOOST_TEST(ec == redlock::error::taken);
        co_await g.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_cluster_node_keeps_the_holders_and_the_limit_in_the_names_slot)
{
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    auto s = c.make_semaphore("crawlers", 2);
    BOOST_TEST(s.quorum() == 1u);
    const auto master = d.owner_of_slot(cluster_deployment::slot_of("crawlers"));
    BOOST_TEST_REQUIRE(master.has_value());
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard a = co_await s.acquire();
        redlock::guard b = co_await s.acquire();
        auto [ec, none] = co_await try_take(s);
        BOOST_TEST(ec == redlock::error::taken);
        BOOST_TEST(holders_on(d[*master].port(), "crawlers") == 2);
        const std::string limit = redis_command(d[*master].port(), {"KEYS", "redlock:limit:*"});
        BOOST_TEST(cluster_deployment::slot_of(limit) == cluster_deployment::slot_of("crawlers"),
                   limit);
        co_await a.release();
        co_await b.release();
        BOOST_TEST(redis_command(d[*master].port(), {"EXISTS", "crawlers"}) == "0");
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_sentinel_node_grants_and_takes_back_permits_on_its_master)
{
    sentinel_deployment d;
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({d.url()}));
    auto s = c.make_semaphore("reports", 1);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await s.acquire();
        BOOST_TEST(holders_on(d.master.port(), "reports") == 1);
        auto [ec, none] = co_await try_take(s);
        BOOST_TEST(ec == redlock::error::taken);
        co_await g.release();
        BOOST_TEST(holders_on(d.master.port(), "reports") == 0);
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(blocking_try_calls_say_full_and_release_gives_back_the_newest_permit)
{
    redis_cluster nodes(1);
    blocking::client c(config::from_urls(nodes.urls()));
    blocking::semaphore s = c.make_semaphore("blocking:slots", 2, {.expiry = 10s});
    BOOST_TEST(s.name() == "blocking:slots");
    BOOST_TEST(s.quorum() == 1u);
    s.acquire();
    BOOST_TEST(s.try_acquire());
    BOOST_TEST(s.held() == 2u);
    BOOST_TEST(!s.try_acquire());
    BOOST_TEST(s.last_report().nodes.at(0).status == node_status::taken);
    const auto before = steady::now();
    BOOST_TEST(!s.try_acquire_for(150ms));
    BOOST_TEST((steady::now() - before >= 150ms));
    BOOST_TEST(!s.try_acquire_until(std::chrono::system_clock::now() + 50ms));
    s.release();
    BOOST_TEST(s.held() == 1u);
    BOOST_TEST(holders_on(nodes[0].port(), "blocking:slots") == 1);
    BOOST_TEST(s.try_acquire_for(1s));
    s.release();
    s.release();
    BOOST_TEST(s.held() == 0u);
    BOOST_TEST(holders_on(nodes[0].port(), "blocking:slots") == 0);
    try {
        s.release();
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == redlock::error::not_held);
        BOOST_TEST(std::string(e.what()).find("holds no permit") != std::string::npos, e.what());
    }
    BOOST_CHECK_THROW(c.make_semaphore("blocking:slots", 0), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(a_blocking_clients_end_gives_its_permits_back)
{
    redis_cluster nodes(3);
    {
        blocking::client c(config::from_urls(nodes.urls()));
        blocking::semaphore s = c.make_semaphore("blocking:kept", 3, {.expiry = 30s});
        s.acquire();
        s.acquire();
        for (std::size_t i = 0; i < 3; ++i) {
            BOOST_TEST(holders_on(nodes[i].port(), "blocking:kept") == 2);
        }
    }
    for (std::size_t i = 0; i < 3; ++i) {
        BOOST_TEST(holders_on(nodes[i].port(), "blocking:kept") == 0);
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
