// SPDX-License-Identifier: BSL-1.0
// Cancellation and completion tokens: every operation honours its handler's cancellation
// slot, a cancelled acquire leaves nothing behind, and any token works.

#include "fixture.hpp"

#include <future>
#include <thread>

namespace redlock::test {
namespace {

using boost::system::error_code;

BOOST_AUTO_TEST_SUITE(cancellation)

BOOST_FIXTURE_TEST_CASE(cancelling_a_waiting_acquire_aborts_it, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto holder = c.make_mutex("wanted");
    auto waiter = c.make_mutex("wanted", {.tries = 100000, .retry_delay = 10ms, .value = "waiter"});
    asio::cancellation_signal cancel;
    std::optional<error_code> outcome;
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await holder.acquire();
        waiter.async_acquire(
            asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, redlock::guard g) {
                BOOST_TEST(!g.owns_lock());
                outcome = ec;
            }));
        // Let it make a few attempts, then cancel it.
        asio::steady_timer t(co_await asio::this_coro::executor, 100ms);
        co_await t.async_wait(asio::use_awaitable);
        BOOST_TEST(!outcome.has_value());
        const auto cancelled_at = steady::now();
        cancel.emit(asio::cancellation_type::terminal);
        while (!outcome) {
            t.expires_after(1ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_TEST((since(cancelled_at) < 1000ms));
        BOOST_TEST(*outcome == asio::error::operation_aborted);
        // "Retries exhausted" is a different outcome from "cancelled".
        BOOST_TEST(*outcome != redlock::error::failed);
        BOOST_TEST(holding("wanted", held.value()) >= 3u);
        BOOST_TEST(holding("wanted", "waiter") == 0u);
        co_return 0;
    }());
}

// The SETs are in the servers' hands (writes paused) when the acquire is cancelled: the
// clean-up queued behind them on the same connections must delete what they set.
BOOST_FIXTURE_TEST_CASE(cancelled_acquire_in_flight_leaves_no_key, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("inflight", {.expiry = 10s, .value = "cancelled-owner"});
    run(io, [&]() -> asio::awaitable<int> {
        // Open the connections first, so that the pause catches the SETs themselves.
        redlock::guard warm = co_await m.acquire();
        co_await warm.release();
        for (std::size_t i = 0; i < 5; ++i) {
            redis_command(nodes[i].port(), {"CLIENT", "PAUSE", "300", "WRITE"});
        }
        asio::cancellation_signal cancel;
        asio::steady_timer t(co_await asio::this_coro::executor, 30ms);
        t.async_wait([&](error_code) { cancel.emit(asio::cancellation_type::terminal); });
        auto [ec, g] = co_await m.async_acquire(
            asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(!g.owns_lock());
        co_return 0;
    }());
    BOOST_TEST(holding("inflight", "cancelled-owner") == 0u);
}

BOOST_FIXTURE_TEST_CASE(cancelling_the_awaiting_coroutine_cancels_the_acquire, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto holder = c.make_mutex("coro");
    auto waiter =
        c.make_mutex("coro", {.tries = 100000, .retry_delay = 10ms, .value = "coro-waiter"});
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await holder.acquire();
        asio::cancellation_signal cancel;
        std::exception_ptr thrown;
        bool done = false;
        asio::co_spawn(
            co_await asio::this_coro::executor,
            [&]() -> asio::awaitable<void> { redlock::guard g = co_await waiter.acquire(); },
            asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                thrown = e;
                done = true;
            }));
        asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
        co_await t.async_wait(asio::use_awaitable);
        cancel.emit(asio::cancellation_type::terminal);
        while (!done) {
            t.expires_after(1ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        BOOST_REQUIRE(thrown);
        try {
            std::rethrow_exception(thrown);
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == asio::error::operation_aborted);
        }
        BOOST_TEST(holding("coro", "coro-waiter") == 0u);
        co_return 0;
    }());
}

BOOST_FIXTURE_TEST_CASE(every_completion_token_works, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_mutex("tokens");

    // A plain callback; never invoked inside the initiating call.
    bool called = false;
    redlock::guard from_callback;
    m.async_acquire([&](error_code ec, redlock::guard g) {
        BOOST_TEST(!ec);
        from_callback = std::move(g);
        called = true;
    });
    BOOST_TEST(!called);
    run(io, [&]() -> asio::awaitable<int> {
        asio::steady_timer t(co_await asio::this_coro::executor);
        while (!called) {
            t.expires_after(1ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        co_return 0;
    }());
    BOOST_TEST(from_callback.owns_lock());
    from_callback.async_release([&](error_code ec) {
        BOOST_TEST(!ec);
        called = false;
    });
    io.restart();
    io.run_for(5s);
    BOOST_TEST(!called);

    // use_awaitable, deferred (composed before it runs), as_tuple.
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g = co_await m.async_acquire(asio::use_awaitable);
        co_await g.async_release(asio::use_awaitable);
        auto lazy = m.acquire();  // nothing happens until it is awaited
        BOOST_TEST(holding("tokens", g.value()) == 0u);
        redlock::guard h = co_await std::move(lazy);
        auto [ec, held] = co_await h.async_valid(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec);
        BOOST_TEST(held);
        co_await h.release();
        co_return 0;
    }());

    // use_future, with the io_context on another thread.
    auto work = asio::make_work_guard(io);
    io.restart();
    std::thread runner([&] { io.run(); });
    std::future<redlock::guard> f = m.async_acquire(asio::use_future);
    redlock::guard g = f.get();
    BOOST_TEST(g.owns_lock());
    std::future<void> r = g.async_release(asio::use_future);
    r.get();
    BOOST_TEST(!g.owns_lock());
    work.reset();
    runner.join();
}

BOOST_AUTO_TEST_CASE(bad_input_is_rejected_with_a_message_naming_the_field)
{
    asio::io_context io;
    auto message_of = [](auto&& make) {
        try {
            make();
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == redlock::error::invalid_argument);
            return std::string(e.what());
        }
        return std::string("no exception");
    };
    BOOST_TEST(message_of([&] {
                   redlock::client(io.get_executor(), redlock::config{});
               }).find("nodes") != std::string::npos);
    BOOST_TEST(message_of([&] {
                   redlock::client(
                       io.get_executor(),
                       redlock::config::from_urls({"redis://127.0.0.1:1", "redis://127.0.0.1:1"}));
               }).find("repeats") != std::string::npos);
    BOOST_TEST(message_of([&] {
                   redlock::config::from_urls({"redis://127.0.0.1:notaport"});
               }).find("port") != std::string::npos);
    redlock::client c(io.get_executor(), redlock::config::from_urls({"redis://127.0.0.1:1"}));
    BOOST_TEST(message_of([&] { c.make_mutex(""); }).find("name") != std::string::npos);
    BOOST_TEST(message_of([&] { c.make_mutex("k", {.expiry = 0ms}); }).find("expiry") !=
               std::string::npos);
    BOOST_TEST(message_of([&] { c.make_mutex("k", {.tries = 0}); }).find("tries") !=
               std::string::npos);
    BOOST_TEST(message_of([&] { c.make_mutex("k", {.drift_factor = 1.0}); }).find("drift_factor") !=
               std::string::npos);
    BOOST_TEST(message_of([&] {
                   c.make_mutex("k", {.timeout_factor = -0.5});
               }).find("timeout_factor") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
