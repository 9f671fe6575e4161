// SPDX-License-Identifier: BSL-1.0
// The registry of waiting clients: a release of a contended mutex names one waiting client,
// the one that has waited longest, and passes over those that stopped waiting or do not try.

#include "fixture.hpp"

#include <array>
#include <future>
#include <thread>

namespace redlock::test {
namespace {

using boost::system::error_code;

// How many clients each node holds in the registry of `key` (no key prefix).
std::string registered_on(const redis_cluster& nodes, std::size_t i, const std::string& key)
{
    return redis_command(nodes[i].port(), {"ZCARD", "redlock:waiters:" + key});
}

// Until `clients` clients are registered as waiting for `key` on every node, and listen on
// their own channels there (a release names a client only while it listens).
asio::awaitable<void> until_registered(const redis_cluster& nodes, const std::string& key,
                                       std::size_t clients)
{
    // Locals: g++ 12 destroys braced temporaries in a co_await expression twice.
    std::vector<std::string> zcard{"ZCARD", "redlock:waiters:" + key};
    const std::string want = std::to_string(clients);
    co_await until_nodes_answer(nodes, std::move(zcard), want);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (;;) {
            const std::string channels = redis_command(
                nodes[i].port(), {"PUBSUB", "CHANNELS", "redlock:released:" + key + "/*"});
            const auto listed =
                channels.empty() ? 0 : 1 + std::count(channels.begin(), channels.end(), ' ');
            if (static_cast<std::size_t>(listed) >= clients) {
                break;
            }
            co_await pause_for(5ms);
        }
    }
}

// A waiter in a client of its own: four tries, and a retry delay that no test waits out, so
// that it gets the lock only when a release names its client. Counts the delays it asks for.
// Its tries: the first attempt, the one that registers it, the one a release prompts, and one
// more for when that attempt reached a node before the release did (it then retries at once
// on that node's message of the release).
struct named_waiter
{
    redlock::client client;
    int delays = 0;
    std::optional<error_code> outcome;
    redlock::guard guard;

    named_waiter(const asio::any_io_executor& ex, const redlock::config& cfg) : client(ex, cfg) {}

    void acquire(const std::string& key, test_event& event, asio::cancellation_slot slot = {})
    {
        auto delay = [this, &event](int) {
            ++delays;
            event.notify();
            return std::chrono::milliseconds(60s);
        };
        client.make_mutex(key, {.tries = 4, .retry_delay = delay})
            .async_acquire(
                asio::bind_cancellation_slot(slot, [this, &event](error_code ec, redlock::guard g) {
                    outcome = ec;
                    guard = std::move(g);
                    event.notify();
                }));
    }
};

// An io_context run by a thread of its own, which the test can block; joined when it goes,
// also when the test fails.
struct stalling_thread
{
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
    std::promise<void> resumed;
    bool blocked = false;
    std::thread thread{[this] { io.run(); }};

    void block()
    {
        blocked = true;
        asio::post(io, [f = resumed.get_future()] { f.wait(); });
    }
    void resume()
    {
        if (std::exchange(blocked, false)) {
            resumed.set_value();
        }
    }
    void done() { work.reset(); }
    void join()
    {
        if (thread.joinable()) {
            thread.join();
        }
    }
    ~stalling_thread()
    {
        resume();
        io.stop();
        join();
    }
};

BOOST_AUTO_TEST_SUITE(waiters)

BOOST_FIXTURE_TEST_CASE(a_release_names_the_longest_waiting_client_alone, five_nodes)
{
    redlock::client holder(io.get_executor(), config());
    std::array<std::unique_ptr<named_waiter>, 3> w;
    std::vector<int> order;
    bool stuck = false;
    run(io, [&]() -> asio::awaitable<int> {
        test_event event(co_await asio::this_coro::executor);
        redlock::guard held = co_await holder.make_mutex("named").acquire();
        for (std::size_t i = 0; i < w.size(); ++i) {
            w[i] = std::make_unique<named_waiter>(io.get_executor(), config());
            w[i]->acquire("named", event);
            co_await until_registered(nodes, "named", i + 1);
        }
        co_await held.release();
        // Far below the waiters' retry delay: a lost wake-up fails the test with what the
        // nodes hold instead of a bare time-out.
        asio::steady_timer stall(co_await asio::this_coro::executor, 20s);
        stall.async_wait([&](error_code ec) {
            if (!ec) {  // not cancelled: the coroutine and its event still live
                stuck = true;
                event.notify();
            }
        });
        // Each waiter, once it holds the lock, releases it to the next. Had a release woken
        // every client, the waiters woken by each release but the first would have spent
        // their tries on attempts that others won.
        while (order.size() < w.size()) {
            // Until the next one holds the lock, or one completed without it (which fails).
            co_await event.until([&] {
                return stuck || std::any_of(w.begin(), w.end(), [&](const auto& x) {
                           return (x->outcome && *x->outcome) ||
                                  (x->guard.owns_lock() && std::find(order.begin(), order.end(),
                                                                     &x - &w[0]) == order.end());
                       });
            });
            if (std::any_of(w.begin(), w.end(),
                            [](const auto& x) { return x->outcome && *x->outcome; })) {
                break;
            }
            if (stuck) {
                break;
            }
            for (std::size_t i = 0; i < w.size(); ++i) {
                if (w[i]->guard.owns_lock()) {
                    order.push_back(static_cast<int>(i));
                    co_await w[i]->guard.release();
                }
            }
        }
        co_return 0;
    }());
    BOOST_TEST(order == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(!stuck, "no waiter got the lock for 20 s");
    if (stuck) {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            BOOST_TEST_MESSAGE("node "
                               << i << ": key " << redis_command(nodes[i].port(), {"GET", "named"})
                               << ", registry "
                               << redis_command(nodes[i].port(), {"ZRANGE", "redlock:waiters:named",
                                                                  "0", "-1", "WITHSCORES"})
                               << ", named "
                               << redis_command(nodes[i].port(),
                                                {"HGETALL", "redlock:waiters-named:named"}));
        }
        for (std::size_t i = 0; i < w.size(); ++i) {
            BOOST_TEST_MESSAGE("waiter " << i << ": " << w[i]->delays << " delays asked, "
                                         << (w[i]->outcome ? w[i]->outcome->message() : "pending")
                                         << (w[i]->guard.owns_lock() ? ", holding" : ""));
        }
        BOOST_TEST_MESSAGE("order:");
        for (int i : order) {
            BOOST_TEST_MESSAGE(i);
        }
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
        BOOST_TEST((w[i]->outcome == error_code{}),
                   "waiter " << i << ": " << w[i]->outcome.value_or(error_code{}).message() << "\n"
                             << w[i]->guard.last_report().to_string());
        // The delay after its registering attempt, and one more at most: a release named it.
        BOOST_TEST(w[i]->delays <= 2, "waiter " << i);
    }
    // Each release took its client out of the registry.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(registered_on(nodes, i, "named") == "0", "node " << i);
    }
}

BOOST_FIXTURE_TEST_CASE(a_client_that_stops_waiting_leaves_the_registry, five_nodes)
{
    redlock::client holder(io.get_executor(), config());
    named_waiter gone(io.get_executor(), config());
    named_waiter next(io.get_executor(), config());
    asio::cancellation_signal cancel_gone;
    run(io, [&]() -> asio::awaitable<int> {
        test_event event(co_await asio::this_coro::executor);
        redlock::guard held = co_await holder.make_mutex("leaving").acquire();
        gone.acquire("leaving", event, cancel_gone.slot());
        co_await until_registered(nodes, "leaving", 1);
        next.acquire("leaving", event);
        co_await until_registered(nodes, "leaving", 2);
        // The first waiter gives up: its client takes itself out of the registry.
        cancel_gone.emit(asio::cancellation_type::terminal);
        co_await event.until([&] { return gone.outcome.has_value(); });
        std::vector<std::string> zcard{"ZCARD", "redlock:waiters:leaving"};
        co_await until_nodes_answer(nodes, std::move(zcard), "1");
        co_await held.release();
        co_await event.until([&] { return next.outcome.has_value(); });
        co_await next.guard.release();
        co_return 0;
    }());
    BOOST_TEST(*gone.outcome == asio::error::operation_aborted);
    BOOST_TEST((next.outcome == error_code{}));
    BOOST_TEST(next.delays <= 2);
    // The last release took the last client out: no key of the registry stays behind.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redis_command(nodes[i].port(), {"EXISTS", "redlock:waiters:leaving"}) == "0");
    }
}

BOOST_FIXTURE_TEST_CASE(a_registered_client_nobody_hears_is_passed_over, five_nodes)
{
    redlock::client holder(io.get_executor(), config());
    named_waiter next(io.get_executor(), config());
    run(io, [&]() -> asio::awaitable<int> {
        test_event event(co_await asio::this_coro::executor);
        redlock::guard held = co_await holder.make_mutex("unheard").acquire();
        next.acquire("unheard", event);
        co_await until_registered(nodes, "unheard", 1);
        // A client that died while it waited: the longest-waiting entry, and no channel.
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            redis_command(nodes[i].port(), {"ZADD", "redlock:waiters:unheard", "1", "dead"});
        }
        co_await held.release();
        co_await event.until([&] { return next.outcome.has_value(); });
        co_return 0;
    }());
    BOOST_TEST((next.outcome == error_code{}));
    BOOST_TEST(next.guard.owns_lock());
    BOOST_TEST(next.delays <= 2);
    // The release took the dead entry out.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redis_command(nodes[i].port(), {"ZSCORE", "redlock:waiters:unheard", "dead"}) ==
                   "(nil)");
    }
}

BOOST_FIXTURE_TEST_CASE(a_named_client_that_does_not_try_is_passed_over_after_a_deadline,
                        five_nodes)
{
    // An expiry of 2 s: a named client has a per-node deadline (100 ms) to try.
    const std::chrono::milliseconds expiry = 2s;
    redlock::client holder(io.get_executor(), config());
    // The stalled client runs on a thread of its own, which the test blocks.
    stalling_thread stalling;
    redlock::client stalled(stalling.io.get_executor(), config());
    std::atomic<bool> stalled_done{false};
    asio::cancellation_signal stop_stalled;
    named_waiter poller(io.get_executor(), config());
    named_waiter last(io.get_executor(), config());
    run(io, [&]() -> asio::awaitable<int> {
        test_event event(co_await asio::this_coro::executor);
        // A local: g++ 12 destroys braced temporaries in a co_await expression twice.
        redlock::mutex holder_mutex = holder.make_mutex("stalled", {.expiry = expiry});
        redlock::guard held = co_await holder_mutex.acquire();
        asio::post(stalling.io, [&] {
            stalled.make_mutex("stalled", {.expiry = expiry, .tries = 3, .retry_delay = 60s})
                .async_acquire(asio::bind_cancellation_slot(
                    stop_stalled.slot(), [&](error_code, redlock::guard) { stalled_done = true; }));
        });
        co_await until_registered(nodes, "stalled", 1);
        // Its last resort is its retry delay: 300 ms, then it tries again.
        poller.client.make_mutex("stalled", {.expiry = expiry, .tries = 100, .retry_delay = 300ms})
            .async_acquire([&](error_code ec, redlock::guard g) {
                poller.outcome = ec;
                poller.guard = std::move(g);
                event.notify();
            });
        co_await until_registered(nodes, "stalled", 2);
        last.acquire("stalled", event);
        co_await until_registered(nodes, "stalled", 3);
        stalling.block();
        // Names the stalled client, which does not try: the lock stays free until the poller's
        // delay ends.
        co_await held.release();
        co_await event.until([&] { return poller.outcome.has_value(); });
        BOOST_TEST(poller.guard.owns_lock());
        // Released more than a per-node deadline after the stalled client was named, this
        // release passes it over and names the last waiter.
        co_await pause_for(150ms);
        co_await poller.guard.release();
        co_await event.until([&] { return last.outcome.has_value(); });
        BOOST_TEST(last.guard.owns_lock());
        BOOST_TEST(last.delays <= 2);
        co_await last.guard.release();
        co_return 0;
    }());
    stalling.resume();
    // Resumed, it may attempt on the message that named it, or wait out its delay: cancelled.
    asio::post(stalling.io, [&] {
        stop_stalled.emit(asio::cancellation_type::terminal);
        stalled.async_shutdown([&](error_code) { stalling.done(); });
    });
    stalling.join();
    BOOST_TEST(stalled_done.load());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
