// SPDX-License-Identifier: BSL-1.0
// Lock events (config::observer) against real servers: each kind's sequence, the failures
// with their errors, extensions (the guard's and the watchdog's), a loss, and exactly one
// end (released or lost) for every grant.

#include "fixture.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// How Boost.Test prints the event kinds of a failed comparison.
namespace redlock {
inline std::ostream& boost_test_print_type(std::ostream& os, lock_event_kind k)
{
    return os << to_string(k);
}
}  // namespace redlock

namespace redlock::test {
namespace {

using boost::system::error_code;

// An event as the observer saw it, with the views copied.
struct seen
{
    lock_event_kind kind;
    std::string type;
    std::string name;
    std::chrono::nanoseconds elapsed;
    int attempts;
    error_code error;
};

// Records the events of one client. The io_context runs on the test's thread, so the
// observer (on the client's strand) and the test never run at once.
struct event_log
{
    std::shared_ptr<std::vector<seen>> events = std::make_shared<std::vector<seen>>();

    lock_observer observer() const
    {
        return [events = events](const lock_event& e) {
            events->push_back(
                {e.kind, std::string(e.type), std::string(e.name), e.elapsed, e.attempts, e.error});
        };
    }
    std::vector<lock_event_kind> kinds() const
    {
        std::vector<lock_event_kind> all;
        for (const seen& e : *events) {
            all.push_back(e.kind);
        }
        return all;
    }
    std::size_t count(lock_event_kind kind) const
    {
        return static_cast<std::size_t>(std::count_if(
            events->begin(), events->end(), [kind](const seen& e) { return e.kind == kind; }));
    }
    const seen& last() const { return events->back(); }
    bool has(std::size_t n) const { return events->size() >= n; }
};

// The kinds in order, for a failed check's message.
std::string names(const std::vector<lock_event_kind>& kinds)
{
    std::string all;
    for (lock_event_kind k : kinds) {
        all += std::string(to_string(k)) + ' ';
    }
    return all;
}

// Three masters, a client with the log as its observer, and a second client without one to
// hold locks against it.
struct observed_nodes
{
    redis_cluster nodes{3};
    asio::io_context io;
    event_log log;
    redlock::client c{io.get_executor(), with_observer()};
    redlock::client other{io.get_executor(), config::from_urls(nodes.urls())};

    redlock::config with_observer() const
    {
        auto cfg = config::from_urls(nodes.urls());
        cfg.observer = log.observer();
        return cfg;
    }
    void del_everywhere(const std::string& key)
    {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            redis_command(nodes[i].port(), {"DEL", key});
        }
    }
};

using kinds = std::vector<lock_event_kind>;
constexpr auto acquired = lock_event_kind::acquired;
constexpr auto acquire_failed = lock_event_kind::acquire_failed;
constexpr auto released = lock_event_kind::released;
constexpr auto extended = lock_event_kind::extended;
constexpr auto extend_failed = lock_event_kind::extend_failed;
constexpr auto lost = lock_event_kind::lost;

// Holds the guard for `hold`, then releases it.
asio::awaitable<void> hold_then_release(redlock::guard g, std::chrono::milliseconds hold)
{
    asio::steady_timer t(co_await asio::this_coro::executor, hold);
    co_await t.async_wait(asio::use_awaitable);
    co_await g.release();
}

void expect_grant_and_release(const event_log& log, std::string_view type, std::string_view name)
{
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquired, released}));
    const seen& grant = log.events->at(0);
    BOOST_TEST(grant.type == type);
    BOOST_TEST(grant.name == name);
    BOOST_TEST(grant.attempts == 1);
    BOOST_TEST(!grant.error);
    BOOST_TEST((grant.elapsed > 0ns && grant.elapsed < 5s));
    const seen& end = log.events->at(1);
    BOOST_TEST(end.type == type);
    BOOST_TEST(end.name == name);
    BOOST_TEST(!end.error);
    // Held for the 30 ms of hold_then_release, and for the grant's own return at most.
    BOOST_TEST((end.elapsed >= 30ms && end.elapsed < 5s));
}

BOOST_AUTO_TEST_SUITE(lock_events)

BOOST_FIXTURE_TEST_CASE(each_kind_tells_its_grant_and_its_release, observed_nodes)
{
    struct kind_case
    {
        std::string_view type;
        std::function<asio::awaitable<redlock::guard>()> acquire;
    };
    auto rw = c.make_rw_mutex("rw");
    auto sem = c.make_semaphore("sem", 2);
    auto plain = c.make_mutex("plain");
    auto fair = c.make_mutex("fair", {.fair = true});
    const std::vector<kind_case> cases{
        {"mutex", [&] { return plain.acquire()(asio::use_awaitable); }},
        {"fair", [&] { return fair.acquire()(asio::use_awaitable); }},
        {"read", [&] { return rw.acquire_shared()(asio::use_awaitable); }},
        {"write", [&] { return rw.acquire()(asio::use_awaitable); }},
        {"semaphore", [&] { return sem.acquire()(asio::use_awaitable); }},
    };
    const std::vector<std::string_view> names{"plain", "fair", "rw", "rw", "sem"};
    for (std::size_t i = 0; i < cases.size(); ++i) {
        BOOST_TEST_CONTEXT(cases[i].type)
        {
            log.events->clear();
            run(io, [&]() -> asio::awaitable<int> {
                co_await hold_then_release(co_await cases[i].acquire(), 30ms);
                co_return 0;
            }());
            expect_grant_and_release(log, cases[i].type, names[i]);
        }
    }
}

BOOST_FIXTURE_TEST_CASE(a_guard_released_by_its_destructor_tells_released, observed_nodes)
{
    auto m = c.make_mutex("dropped");
    run(io, [&]() -> asio::awaitable<int> {
        {
            redlock::guard g = co_await m.acquire();
        }
        BOOST_TEST(co_await settles([&] { return log.has(2); }));
        co_return 0;
    }());
    BOOST_TEST(log.kinds() == (kinds{acquired, released}));
}

BOOST_FIXTURE_TEST_CASE(a_taken_lock_tells_acquire_failed_with_taken, observed_nodes)
{
    auto theirs = other.make_mutex("busy");
    auto mine = c.make_mutex("busy");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await theirs.acquire();
        auto [ec, g] = co_await try_get(mine, true);
        BOOST_TEST(ec == redlock::error::taken);
        co_return 0;
    }());
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquire_failed}));
    BOOST_TEST(log.last().error == redlock::error::taken);
    BOOST_TEST(log.last().attempts == 1);
    BOOST_TEST(log.last().type == "mutex");
    BOOST_TEST(log.last().name == "busy");
}

// An election's campaign waits whoever leads: its wait ends it with `failed`, and the event
// says what the caller got.
BOOST_FIXTURE_TEST_CASE(a_campaign_whose_wait_passes_tells_acquire_failed_with_failed,
                        observed_nodes)
{
    auto leading = other.make_election("jobs");
    auto waiting = c.make_election("jobs", {.wait = 200ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard leadership = co_await leading.campaign("first");
        auto [ec, g] = co_await waiting.async_campaign("second", asio::as_tuple(asio::deferred));
        BOOST_TEST(ec == redlock::error::failed);
        co_return 0;
    }());
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquire_failed}));
    BOOST_TEST(log.last().error == redlock::error::failed);
    BOOST_TEST(log.last().type == "election");
}

BOOST_FIXTURE_TEST_CASE(an_acquire_that_retried_counts_its_attempts, observed_nodes)
{
    // Locks are made outside co_await expressions: g++ 12 may destroy a temporary there twice.
    auto theirs = other.make_mutex("later");
    auto mine = c.make_mutex("later", {.tries = 1000, .retry_delay = 20ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await theirs.acquire();
        asio::co_spawn(co_await asio::this_coro::executor,
                       hold_then_release(std::move(held), 150ms), asio::detached);
        redlock::guard g = co_await mine.acquire();
        co_await g.release();
        co_return 0;
    }());
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquired, released}));
    const seen& grant = log.events->at(0);
    BOOST_TEST(grant.attempts >= 2);
    // It waited for the other client's release, 150 ms after the hold began.
    BOOST_TEST((grant.elapsed >= 100ms && grant.elapsed < 10s));
}

BOOST_AUTO_TEST_CASE(unreachable_nodes_tell_acquire_failed_with_failed)
{
    asio::io_context io;
    event_log log;
    auto cfg = config::from_urls({"redis://127.0.0.1:" + std::to_string(unused_loopback_port())});
    cfg.observer = log.observer();
    redlock::client c(io.get_executor(), cfg);
    auto [ec, g] = run(io, try_get(c.make_mutex("nobody", {.tries = 2, .retry_delay = 10ms})));
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquire_failed}));
    BOOST_TEST(log.last().error == redlock::error::failed);
    BOOST_TEST(log.last().attempts == 2);
    BOOST_TEST((log.last().elapsed >= 10ms));
}

BOOST_AUTO_TEST_CASE(misconfigured_nodes_tell_acquire_failed_with_misconfigured)
{
    redis_server server;
    BOOST_REQUIRE(redis_command(server.port(), {"CONFIG", "SET", "requirepass", "right"}) == "OK");
    asio::io_context io;
    event_log log;
    auto cfg = config::from_urls({"redis://:wrong@127.0.0.1:" + std::to_string(server.port())});
    cfg.observer = log.observer();
    redlock::client c(io.get_executor(), cfg);
    auto [ec, g] = run(io, try_get(c.make_mutex("refused")));
    BOOST_TEST(ec == redlock::error::misconfigured);
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquire_failed}));
    BOOST_TEST(log.last().error == redlock::error::misconfigured);
    BOOST_TEST(log.last().attempts == 1);
}

BOOST_FIXTURE_TEST_CASE(a_cancelled_acquire_tells_operation_aborted, observed_nodes)
{
    auto theirs = other.make_mutex("wanted");
    auto mine = c.make_mutex("wanted", {.tries = 100000, .retry_delay = 10ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await theirs.acquire();
        asio::cancellation_signal cancel;
        asio::steady_timer t(co_await asio::this_coro::executor, 80ms);
        t.async_wait([&](error_code) { cancel.emit(asio::cancellation_type::terminal); });
        auto [ec, g] = co_await mine.async_acquire(
            asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
        BOOST_TEST(ec == asio::error::operation_aborted);
        co_return 0;
    }());
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquire_failed}));
    BOOST_TEST(log.last().error == asio::error::operation_aborted);
    BOOST_TEST(log.last().attempts >= 2);
    BOOST_TEST((log.last().elapsed >= 80ms));
}

BOOST_FIXTURE_TEST_CASE(extensions_tell_extended_and_extend_failed, observed_nodes)
{
    auto m = c.make_mutex("stretched", {.expiry = 2s});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        co_await g.extend();
        del_everywhere("stretched");
        auto [ec] = co_await g.async_extend(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::extend_failed);
        auto [released_ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(released_ec == redlock::error::not_held);
        co_return 0;
    }());
    // Nobody watched the lock, so its loss was not found: the release ends the hold.
    BOOST_TEST_REQUIRE(log.kinds() == (kinds{acquired, extended, extend_failed, released}));
    BOOST_TEST(log.events->at(1).attempts == 1);
    BOOST_TEST(!log.events->at(1).error);
    BOOST_TEST(log.events->at(2).error == redlock::error::extend_failed);
}

// The watchdog extends a 300 ms lock every 100 ms; once the key is gone from the nodes its
// next extension finds it so, and the lock is lost. Its release then adds no `released`.
BOOST_FIXTURE_TEST_CASE(a_lock_whose_key_is_deleted_is_lost_once, observed_nodes)
{
    auto m = c.make_mutex("vanishing", {.expiry = 300ms, .auto_extend = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        BOOST_TEST(co_await settles([&] { return log.count(extended) >= 2; }));
        del_everywhere("vanishing");
        auto [ec] = co_await g.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::lost);
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));  // after the loss
        co_return 0;
    }());
    const kinds all = log.kinds();
    BOOST_TEST_REQUIRE(all.size() >= 5u, names(all));
    BOOST_TEST((all.front() == acquired));
    BOOST_TEST((all.back() == lost), names(all));
    BOOST_TEST((all[all.size() - 2] == extend_failed), names(all));
    BOOST_TEST(log.count(released) == 0u);
    BOOST_TEST(log.count(lost) == 1u);
    BOOST_TEST(log.last().type == "mutex");
    BOOST_TEST(log.last().name == "vanishing");
    // Held from the grant through at least two extensions (100 ms apart) until the loss.
    BOOST_TEST((log.last().elapsed >= 200ms && log.last().elapsed < 10s));
}

// Many acquires of one lock from two clients, some granted, some not, some released by
// destructors: every grant ends exactly once.
BOOST_FIXTURE_TEST_CASE(every_grant_ends_exactly_once, observed_nodes)
{
    auto mine = c.make_mutex("contended", {.tries = 3, .retry_delay = 5ms});
    auto theirs = other.make_mutex("contended", {.tries = 3, .retry_delay = 5ms});
    run(io, [&]() -> asio::awaitable<int> {
        auto worker = [&](redlock::mutex m, int rounds) -> asio::awaitable<void> {
            for (int i = 0; i < rounds; ++i) {
                auto [ec, g] = co_await try_get(m);
                if (!ec && i % 2 == 0) {
                    co_await g.release();
                }  // else the destructor releases it
            }
        };
        auto ex = co_await asio::this_coro::executor;
        int done = 0;
        for (auto m : {mine, mine, theirs, theirs}) {
            asio::co_spawn(ex, worker(m, 20), [&](std::exception_ptr) { ++done; });
        }
        BOOST_TEST(co_await settles([&] { return done == 4; }, 20s));
        BOOST_TEST(co_await settles(
            [&] { return log.count(acquired) == log.count(released) + log.count(lost); }));
        co_return 0;
    }());
    BOOST_TEST(log.count(acquired) > 0u);
    BOOST_TEST(log.count(lost) == 0u);
    BOOST_TEST(log.count(acquired) + log.count(acquire_failed) == 40u);
    BOOST_TEST(log.count(acquired) == log.count(released));
}

BOOST_FIXTURE_TEST_CASE(a_release_after_shutdown_still_ends_the_hold, observed_nodes)
{
    auto m = c.make_mutex("closing");
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        co_await c.shutdown();
        auto [ec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::shut_down);
        auto [later, none] = co_await try_get(m);
        BOOST_TEST(later == redlock::error::shut_down);
        co_return 0;
    }());
    BOOST_TEST(log.kinds() == (kinds{acquired, released, acquire_failed}));
    BOOST_TEST(log.last().error == redlock::error::shut_down);
    BOOST_TEST(log.last().attempts == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
