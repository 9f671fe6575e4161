// SPDX-License-Identifier: BSL-1.0
// Holding a lock for real work: the watchdog, the lost-lock signal and with_lock.

#include "fixture.hpp"

namespace redlock::test {
namespace {

using boost::system::error_code;

// Extensions and releases both go through EVALSHA.
long evalsha_calls(std::uint16_t port)
{
    return command_calls(port, "evalsha");
}

BOOST_AUTO_TEST_SUITE(lifecycle)

BOOST_FIXTURE_TEST_CASE(watchdog_keeps_the_lock_for_three_expiries_then_stops, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    // A short expiry, so that three of them pass quickly; per-node deadlines of 60 ms rather
    // than 15, so that a loaded machine's scheduling delays do not fail its extensions.
    auto m = c.make_mutex("watched", {.expiry = 300ms, .timeout_factor = 0.2, .auto_extend = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        const auto first_until = g.until();
        co_await pause_for(900ms);  // three times the expiry
        BOOST_TEST((g.until() > steady::now()));
        BOOST_TEST((g.until() > first_until + 400ms));
        BOOST_TEST(!g.lost());
        BOOST_TEST(holding("watched", g.value()) >= 3u);
        // Nobody else gets in while the watchdog holds it.
        auto [ec, other] =
            co_await c.make_mutex("watched").async_try_acquire(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::taken);

        co_await g.release();
        long calls_after_release = 0;
        for (std::size_t i = 0; i < 5; ++i) {
            BOOST_TEST(!value_on(i, "watched").has_value());
            calls_after_release += evalsha_calls(nodes[i].port());
        }
        // Two watchdog periods later, no node has seen another extension.
        co_await pause_for(200ms);
        long calls_later = 0;
        for (std::size_t i = 0; i < 5; ++i) {
            calls_later += evalsha_calls(nodes[i].port());
        }
        BOOST_TEST(calls_later == calls_after_release);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(extension_limit_bounds_the_hold, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m =
        c.make_mutex("bounded", {.expiry = 300ms, .auto_extend = true, .auto_extend_limit = 2});
    run(io, [&]() -> asio::awaitable<int> {
        const auto start = steady::now();
        redlock::guard g = co_await m.acquire();
        auto [ec] = co_await g.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::lost);
        BOOST_TEST(g.lost());
        // Two extensions at ~100 ms and ~200 ms, then the last validity (~294 ms) runs out.
        BOOST_TEST((since(start) >= 450ms));
        BOOST_TEST((since(start) < 2000ms));
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(manual_extensions_count_against_the_limit, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("capped", {.expiry = 10s, .auto_extend = true, .auto_extend_limit = 2});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        co_await g.extend();
        co_await g.extend();
        auto [ec] = co_await g.async_extend(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::extend_failed);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(loss_on_a_flushed_majority_fires_within_one_expiry, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("flushed", {.expiry = 1s, .auto_extend = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        // An operation bound to the guard's lost slot: a long timer standing in for work.
        asio::steady_timer work(co_await asio::this_coro::executor, 30s);
        std::optional<error_code> work_outcome;
        work.async_wait(
            asio::bind_cancellation_slot(g.lost_slot(), [&](error_code e) { work_outcome = e; }));

        for (std::size_t i = 0; i < 3; ++i) {
            redis_command(nodes[i].port(), {"FLUSHALL"});
        }
        const auto flushed = steady::now();
        auto [ec] = co_await g.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::lost);
        BOOST_TEST((since(flushed) < 1000ms));
        co_await pause_for(1ms);  // let the timer's handler run
        BOOST_TEST((work_outcome == std::optional<error_code>(asio::error::operation_aborted)));
        // A lost lock stays lost: extending it is refused.
        auto [extended] = co_await g.async_extend(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(extended == redlock::error::lost);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(loss_on_a_stopped_majority_fires_within_one_expiry, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("stopped", {.expiry = 1s, .auto_extend = true});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        for (std::size_t i = 0; i < 3; ++i) {
            nodes[i].pause();
        }
        const auto stopped = steady::now();
        auto [ec] = co_await g.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::lost);
        // Silent nodes prove nothing, so the watchdog retries until the validity is gone.
        BOOST_TEST((since(stopped) < 1100ms));
        BOOST_TEST((steady::now() >= g.until()));
        co_return 0;
    }());
    for (std::size_t i = 0; i < 3; ++i) {
        nodes[i].resume();
    }
}

BOOST_FIXTURE_TEST_CASE(a_guards_operations_after_shutdown_complete_with_shut_down, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    // Without the fix the wait for loss ended only when this validity ran out.
    auto m = c.make_mutex("after-shutdown", {.expiry = 3s});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.acquire();
        co_await c.async_shutdown();
        const auto shut = steady::now();
        auto [waited] = co_await g.async_wait_lost(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(waited == redlock::error::shut_down);
        BOOST_TEST((since(shut) < 1000ms));
        BOOST_TEST(!g.lost());
        auto [extended] = co_await g.async_extend(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(extended == redlock::error::shut_down);
        auto [checked, valid] = co_await g.async_valid(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(checked == redlock::error::shut_down);
        BOOST_TEST(!valid);
        auto [released] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(released == redlock::error::shut_down);
        // The guard owns nothing afterwards, as after any release.
        BOOST_TEST(!g.owns_lock());
        auto [again] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(again == redlock::error::not_held);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(with_lock_returns_the_work_result_and_releases, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("work");
    std::string value;
    int result = run(io, redlock::with_lock(m, [&](redlock::guard& g) -> asio::awaitable<int> {
                         value = g.value();
                         BOOST_TEST(holding("work", g.value()) >= 3u);
                         co_return 42;
                     }));
    BOOST_TEST(result == 42);
    BOOST_TEST(holding("work", value) == 0u);
}

BOOST_FIXTURE_TEST_CASE(with_lock_cancels_the_work_when_the_lock_is_lost, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("doomed", {.expiry = 600ms, .auto_extend = true});
    bool work_cancelled = false;
    auto outcome = run(io, [&]() -> asio::awaitable<error_code> {
        try {
            co_await redlock::with_lock(m, [&](redlock::guard&) -> asio::awaitable<void> {
                for (std::size_t i = 0; i < 3; ++i) {
                    redis_command(nodes[i].port(), {"FLUSHALL"});
                }
                asio::steady_timer long_job(co_await asio::this_coro::executor, 30s);
                auto [e] = co_await long_job.async_wait(asio::as_tuple(asio::use_awaitable));
                work_cancelled = e == asio::error::operation_aborted;
            });
        } catch (const boost::system::system_error& e) {
            co_return e.code();
        }
        co_return error_code{};
    }());
    BOOST_TEST(outcome == redlock::error::lost);
    BOOST_TEST(work_cancelled);
}

BOOST_FIXTURE_TEST_CASE(without_watchdog_the_work_is_cancelled_when_validity_runs_out, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("brief", {.expiry = 300ms});
    const auto start = steady::now();
    auto outcome = run(io, [&]() -> asio::awaitable<error_code> {
        try {
            co_await redlock::with_lock(m, [&](redlock::guard&) -> asio::awaitable<void> {
                asio::steady_timer long_job(co_await asio::this_coro::executor, 30s);
                co_await long_job.async_wait(asio::use_awaitable);
            });
        } catch (const boost::system::system_error& e) {
            co_return e.code();
        }
        co_return error_code{};
    }());
    BOOST_TEST(outcome == redlock::error::lost);
    BOOST_TEST((since(start) < 2000ms));
}

// Three acquires of one key queue up behind a holder, each with a retry delay that polling
// could not beat; `releaser` releases the held lock, then each waiter releases in turn.
// Returns the order in which the waiters got the lock and how often each asked for a delay.
struct queue_outcome
{
    std::vector<int> order;
    std::vector<int> delays;
};
queue_outcome queue_up(asio::io_context& io, const redis_cluster& nodes,
                       redlock::client& waiters_client, redlock::mutex holder,
                       const std::string& key)
{
    queue_outcome out{{}, std::vector<int>(3, 0)};
    run(
        io,
        [&]() -> asio::awaitable<int> {
            test_event event(co_await asio::this_coro::executor);
            redlock::guard held = co_await holder.acquire();
            std::vector<redlock::guard> guards(3);
            for (int i = 0; i < 3; ++i) {
                // Asked for once the first attempt failed and the acquire waits in line.
                auto delay = [&, i](int) {
                    ++out.delays[static_cast<std::size_t>(i)];
                    event.notify();
                    return std::chrono::milliseconds(60s);
                };
                auto m = waiters_client.make_mutex(key, {.tries = 3, .retry_delay = delay});
                m.async_acquire([&, i](error_code ec, redlock::guard g) {
                    BOOST_TEST(!ec, "waiter " << i);
                    out.order.push_back(i);
                    guards[static_cast<std::size_t>(i)] = std::move(g);
                    event.notify();
                });
                co_await event.until([&] { return out.delays[static_cast<std::size_t>(i)] > 0; });
            }
            // A release published before the waiters' client has subscribed reaches nobody (its
            // waiters would retry only after their delay).
            co_await until_subscribed(nodes, "redlock:released:" + key, 1);
            co_await held.release();
            for (std::size_t n = 1; n <= 3; ++n) {
                co_await event.until([&] { return out.order.size() >= n; });
                co_await guards[static_cast<std::size_t>(out.order.back())].release();
            }
            co_return 0;
        }(),
        30s);
    return out;
}

BOOST_FIXTURE_TEST_CASE(a_release_hands_the_lock_to_the_clients_longest_waiting_acquire, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    const queue_outcome q = queue_up(io, nodes, c, c.make_mutex("queue"), "queue");
    BOOST_TEST(q.order == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
    // One attempt each while waiting: a release woke only the one whose turn it was.
    BOOST_TEST(q.delays == (std::vector<int>{1, 1, 1}), boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(another_clients_release_wakes_one_waiter_of_a_client, five_nodes)
{
    redlock::client holder_client(io.get_executor(), config());
    redlock::client waiter_client(io.get_executor(), config());
    const queue_outcome q =
        queue_up(io, nodes, waiter_client, holder_client.make_mutex("remote"), "remote");
    BOOST_TEST(q.order == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(q.delays == (std::vector<int>{1, 1, 1}), boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(a_release_handed_to_a_waiter_of_the_client_is_not_announced, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    std::vector<long> before;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        before.push_back(command_calls(nodes[i].port(), "publish"));
    }
    const queue_outcome q = queue_up(io, nodes, c, c.make_mutex("quiet"), "quiet");
    BOOST_TEST(q.delays == (std::vector<int>{1, 1, 1}), boost::test_tools::per_element());
    // Three releases went to the next in line, whose attempt followed on every connection:
    // the key was never free, so only the last release (nobody waiting) told the others.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(command_calls(nodes[i].port(), "publish") - before[i] == 1, "node " << i);
    }
}

BOOST_FIXTURE_TEST_CASE(a_quiet_hand_off_whose_waiter_is_cancelled_is_announced_after_all,
                        five_nodes)
{
    redlock::client holder_client(io.get_executor(), config());
    redlock::client other_client(io.get_executor(), config());
    run(
        io,
        [&]() -> asio::awaitable<int> {
            test_event event(co_await asio::this_coro::executor);
            redlock::guard held = co_await holder_client.make_mutex("told").acquire();
            int delays = 0;
            auto waiting_long = [&](int) {
                ++delays;
                event.notify();
                return std::chrono::milliseconds(60s);
            };
            // One waiter of the holder's client, one of another client.
            asio::cancellation_signal cancel_mine;
            std::optional<error_code> mine;
            holder_client.make_mutex("told", {.tries = 3, .retry_delay = waiting_long})
                .async_acquire(asio::bind_cancellation_slot(cancel_mine.slot(),
                                                            [&](error_code ec, redlock::guard) {
                                                                mine = ec;
                                                                event.notify();
                                                            }));
            co_await event.until([&] { return delays == 1; });
            std::optional<error_code> theirs;
            redlock::guard their_guard;
            other_client.make_mutex("told", {.tries = 3, .retry_delay = waiting_long})
                .async_acquire([&](error_code ec, redlock::guard g) {
                    theirs = ec;
                    their_guard = std::move(g);
                    event.notify();
                });
            co_await event.until([&] { return delays == 2; });
            // Both clients listen for releases on every node (a release published before a
            // client has subscribed reaches nobody, by design: its waiters retry after the
            // delay).
            co_await until_subscribed(nodes, "redlock:released:told", 2);

            // The release hands the key to the holder's own waiter, quietly; that waiter is
            // cancelled before it can attempt: the emit is queued first, and the release runs
            // inline on this thread and queues the waiter's wake-up behind it.
            asio::post(io, [&] { cancel_mine.emit(asio::cancellation_type::terminal); });
            held.async_release([](error_code) {});
            co_await event.until([&] { return mine.has_value() && theirs.has_value(); });
            BOOST_TEST(*mine == asio::error::operation_aborted);
            // The other client heard of the release after all: it got the lock long before
            // its 60 s delay, without asking for another one.
            BOOST_TEST(!*theirs);
            BOOST_TEST(delays == 2);
            co_await their_guard.release();
            co_return 0;
        }(),
        30s);
}

BOOST_FIXTURE_TEST_CASE(an_acquire_joins_the_line_while_the_client_holds_the_lock, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    const std::uint16_t port = nodes[0].port();
    std::vector<int> order;
    run(
        io,
        [&]() -> asio::awaitable<int> {
            test_event event(co_await asio::this_coro::executor);
            std::vector<redlock::guard> guards(3);
            std::vector<long> sets_when_waiting(3, -1);
            auto start = [&](int i) {
                auto m = c.make_mutex("line", {.tries = 3, .retry_delay = [&, i](int) {
                                                   sets_when_waiting[static_cast<std::size_t>(i)] =
                                                       command_calls(port, "set");
                                                   event.notify();
                                                   return std::chrono::milliseconds(60s);
                                               }});
                m.async_acquire([&, i](error_code ec, redlock::guard g) {
                    BOOST_TEST(!ec, "acquire " << i);
                    order.push_back(i);
                    guards[static_cast<std::size_t>(i)] = std::move(g);
                    event.notify();
                });
            };
            auto waiting = [&](int i) {
                return sets_when_waiting[static_cast<std::size_t>(i)] >= 0;
            };

            redlock::guard held = co_await c.make_mutex("line").acquire();
            start(0);
            co_await event.until([&] { return waiting(0); });
            start(1);
            co_await event.until([&] { return waiting(1); });
            // Handed to 0, while 1 still waits: the lock is the client's own.
            co_await held.release();
            co_await event.until([&] { return order.size() == 1; });

            // A new acquire joins the line behind 1 without sending a request (its attempt
            // would fail against 0), and gets its turn after 1.
            const long sets_before = command_calls(port, "set");
            start(2);
            co_await event.until([&] { return waiting(2); });
            BOOST_TEST(sets_when_waiting[2] == sets_before);
            for (std::size_t n = 1; n <= 3; ++n) {
                co_await event.until([&] { return order.size() >= n; });
                co_await guards[static_cast<std::size_t>(order.back())].release();
            }
            co_return 0;
        }(),
        30s);
    BOOST_TEST(order == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(an_idle_client_leaves_no_work_pending, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto holder = c.make_mutex("idle");
    auto waiter = c.make_mutex("idle", {.tries = 2, .retry_delay = 50ms});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await holder.acquire();
        auto [ec, other] = co_await waiter.async_acquire(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == redlock::error::taken);  // it waited, subscribed, and gave up
        co_await g.release();
        co_return 0;
    }());
    // Connections stay open, but nothing is read or awaited: run() returns at once.
    io.restart();
    const auto start = steady::now();
    io.run_for(3s);
    BOOST_TEST((since(start) < 1000ms));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
