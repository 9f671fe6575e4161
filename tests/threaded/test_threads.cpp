// SPDX-License-Identifier: BSL-1.0
// Clients used from an io_context run by four threads: each client's strand serializes its
// own state, the users' coroutines run anywhere. Also run under ThreadSanitizer.

#define BOOST_TEST_MODULE redlock_threaded
#include <redlock/redlock.hpp>

#include "common/redis_server.hpp"
#include "occupancy.hpp"

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using redlock::test::occupancy;

using task = std::function<asio::awaitable<void>()>;

// Spawns each task on a strand of its own (so that they really run on different threads),
// runs `io` on four threads until every task has finished (at most 60 s), then shuts the
// clients down and joins the threads. Returns how many tasks ended with an exception.
// Boost.Test's assertions are not thread-safe: the tasks count, the test thread asserts.
int run_on_four_threads(asio::io_context& io, const std::vector<task>& tasks,
                        const std::vector<redlock::client*>& clients)
{
    std::atomic<int> failed{0};
    std::atomic<std::size_t> finished{0};
    std::promise<void> all_finished;
    for (const task& t : tasks) {
        asio::co_spawn(asio::make_strand(io), t, [&](std::exception_ptr e) {
            if (e) {
                ++failed;
            }
            if (++finished == tasks.size()) {
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
    for (redlock::client* c : clients) {
        std::future<void> shut = c->async_shutdown(asio::use_future);
        BOOST_TEST((shut.wait_for(30s) == std::future_status::ready));
    }
    work_guard.reset();
    for (auto& t : threads) {
        t.join();
    }
    return failed.load();
}

// Waits `d` on the coroutine's executor: a holder's work.
asio::awaitable<void> work_for(std::chrono::microseconds d)
{
    asio::steady_timer work(co_await asio::this_coro::executor, d);
    co_await work.async_wait(asio::use_awaitable);
}

}  // namespace

BOOST_AUTO_TEST_CASE(contention_from_four_threads_keeps_mutual_exclusion)
{
    redlock::test::redis_cluster nodes(5);
    asio::io_context io;
    redlock::client c(io.get_executor(), redlock::config::from_urls(nodes.urls()));
    const redlock::options opts{.expiry = 10s, .tries = 100000, .retry_delay = 2ms};

    occupancy lock;
    std::atomic<int> entries{0};
    constexpr int workers = 12;
    constexpr int rounds = 6;
    std::vector<task> tasks;
    for (int id = 0; id < workers; ++id) {
        tasks.push_back(
            [&, m = c.make_mutex("threads", opts), id]() mutable -> asio::awaitable<void> {
                for (int round = 0; round < rounds; ++round) {
                    redlock::guard g = co_await m.acquire();
                    ++entries;
                    lock.enter();
                    co_await work_for(200us);
                    lock.leave();
                    if ((id + round) % 2 == 0) {
                        co_await g.release();
                    }  // otherwise ~guard releases in the background
                }
            });
    }
    BOOST_TEST(run_on_four_threads(io, tasks, {&c}) == 0);
    BOOST_TEST(entries.load() == workers * rounds);
    BOOST_TEST(lock.most.load() == 1);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(!redlock::test::redis_get(nodes[i].port(), "threads").has_value());
    }
}

// Three clients in one process share an io_context run by four threads, each with workers
// of every lock kind on the same names: the bounds hold across clients and threads.
BOOST_AUTO_TEST_CASE(several_clients_on_four_threads_keep_every_kind_of_lock_bounded)
{
    redlock::test::redis_cluster nodes(3);
    asio::io_context io;
    std::vector<std::unique_ptr<redlock::client>> clients;
    for (int i = 0; i < 3; ++i) {
        clients.push_back(std::make_unique<redlock::client>(
            io.get_executor(), redlock::config::from_urls(nodes.urls())));
    }
    const redlock::options opts{.expiry = 10s, .tries = 100000, .retry_delay = 2ms};
    constexpr int rounds = 4;

    occupancy mutex_holders, permit_holders, readers, writers;
    std::atomic<int> writer_with_others{0};
    std::atomic<int> entries{0};
    std::vector<task> tasks;
    for (auto& c : clients) {
        for (int w = 0; w < 2; ++w) {
            tasks.push_back(
                [&, m = c->make_mutex("kinds:mutex", opts)]() mutable -> asio::awaitable<void> {
                    for (int round = 0; round < rounds; ++round) {
                        redlock::guard g = co_await m.acquire();
                        mutex_holders.enter();
                        co_await work_for(200us);
                        mutex_holders.leave();
                        ++entries;
                    }
                });
            tasks.push_back([&, s = c->make_semaphore("kinds:permits", 2,
                                                      opts)]() mutable -> asio::awaitable<void> {
                for (int round = 0; round < rounds; ++round) {
                    redlock::guard g = co_await s.acquire();
                    permit_holders.enter();
                    co_await work_for(200us);
                    permit_holders.leave();
                    ++entries;
                }
            });
            tasks.push_back(
                [&, rw = c->make_rw_mutex("kinds:rw", opts)]() mutable -> asio::awaitable<void> {
                    for (int round = 0; round < rounds; ++round) {
                        redlock::guard g = co_await rw.acquire_shared();
                        readers.enter();
                        if (writers.inside.load() != 0) {
                            ++writer_with_others;
                        }
                        co_await work_for(200us);
                        readers.leave();
                        ++entries;
                    }
                });
        }
        tasks.push_back(
            [&, rw = c->make_rw_mutex("kinds:rw", opts)]() mutable -> asio::awaitable<void> {
                for (int round = 0; round < rounds; ++round) {
                    redlock::guard g = co_await rw.acquire();
                    writers.enter();
                    if (readers.inside.load() != 0 || writers.inside.load() != 1) {
                        ++writer_with_others;
                    }
                    co_await work_for(200us);
                    writers.leave();
                    ++entries;
                }
            });
    }
    std::vector<redlock::client*> raw;
    for (auto& c : clients) {
        raw.push_back(c.get());
    }
    BOOST_TEST(run_on_four_threads(io, tasks, raw) == 0);
    BOOST_TEST(entries.load() == static_cast<int>(tasks.size()) * rounds);
    BOOST_TEST(mutex_holders.most.load() == 1);
    BOOST_TEST(permit_holders.most.load() <= 2);
    BOOST_TEST(writers.most.load() == 1);
    BOOST_TEST(writer_with_others.load() == 0);
    // Every guard was released (shutdown waits for the releases): nothing is left on a node.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redlock::test::redis_command(nodes[i].port(), {"DBSIZE"}) == "0");
    }
}
