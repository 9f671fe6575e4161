// SPDX-License-Identifier: BSL-1.0
// One client used from an io_context run by four threads: the client's strand serializes
// its own state, the users' coroutines run anywhere. Also run under ThreadSanitizer.

#define BOOST_TEST_MODULE redlock_threaded
#include <redlock/redlock.hpp>

#include "common/redis_server.hpp"

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(contention_from_four_threads_keeps_mutual_exclusion)
{
    redlock::test::redis_cluster nodes(5);
    asio::io_context io;
    redlock::client c(io.get_executor(), redlock::config::from_urls(nodes.urls()));
    const redlock::options opts{.expiry = 10s, .tries = 100000, .retry_delay = 2ms};

    std::atomic<int> inside{0};
    std::atomic<int> most_inside{0};
    std::atomic<int> entries{0};
    std::atomic<int> finished{0};
    std::atomic<int> failed{0};
    std::promise<void> all_finished;
    constexpr int workers = 12;
    constexpr int rounds = 6;

    auto worker = [&](redlock::mutex m, int id) -> asio::awaitable<void> {
        asio::steady_timer work(co_await asio::this_coro::executor);
        for (int round = 0; round < rounds; ++round) {
            redlock::guard g = co_await m.acquire();
            ++entries;
            int now_inside = ++inside;
            int seen = most_inside.load();
            while (now_inside > seen && !most_inside.compare_exchange_weak(seen, now_inside)) {
            }
            work.expires_after(200us);
            co_await work.async_wait(asio::use_awaitable);
            --inside;
            if ((id + round) % 2 == 0) {
                co_await g.release();
            }  // otherwise ~guard releases in the background
        }
    };
    for (int i = 0; i < workers; ++i) {
        // Each worker on its own strand, so that workers really run on different threads.
        asio::co_spawn(asio::make_strand(io), worker(c.make_mutex("threads", opts), i),
                       [&](std::exception_ptr e) {
                           // Boost.Test's assertions are not thread-safe: count here,
                           // assert on the test thread.
                           if (e) {
                               ++failed;
                           }
                           if (++finished == workers) {
                               all_finished.set_value();
                           }
                       });
    }

    auto work_guard = asio::make_work_guard(io);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&] { io.run(); });
    }
    BOOST_TEST((all_finished.get_future().wait_for(60s) == std::future_status::ready));
    std::future<void> shut = c.async_shutdown(asio::use_future);
    BOOST_TEST((shut.wait_for(30s) == std::future_status::ready));
    work_guard.reset();
    for (auto& t : threads) {
        t.join();
    }
    BOOST_TEST(finished.load() == workers);
    BOOST_TEST(failed.load() == 0);
    BOOST_TEST(entries.load() == workers * rounds);
    BOOST_TEST(most_inside.load() == 1);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(!redlock::test::redis_get(nodes[i].port(), "threads").has_value());
    }
}
