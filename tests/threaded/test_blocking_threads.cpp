// SPDX-License-Identifier: BSL-1.0
// The blocking facade used from several threads at once: threads sharing one mutex, threads
// with mutexes of their own on two clients, timeouts, and a client destroyed while threads
// wait; threads taking permits of semaphores; readers and writers of read-write locks. Run under
// ThreadSanitizer too: the counter that the shared mutex protects is a plain int, so a missing
// happens-before between two holders is a reported race.

#include <redlock/blocking.hpp>

#include "common/redis_server.hpp"
#include "occupancy.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using redlock::test::occupancy;

// Boost.Test's assertions are not thread-safe: threads count failures, the test thread checks.
struct failures
{
    std::atomic<int> count{0};
    std::mutex m;
    std::string first;

    void note(const std::exception& e)
    {
        std::lock_guard lock(m);
        if (count++ == 0) {
            first = e.what();
        }
    }
};

// Many tries after short random delays: contenders that split the nodes between them retry
// apart.
redlock::options retrying_apart()
{
    return {.expiry = 10s, .tries = 100000, .retry_delay = [](int) {
                thread_local std::minstd_rand engine{std::random_device{}()};
                return std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 20)(engine));
            }};
}

void join_all(std::vector<std::thread>& threads)
{
    for (auto& t : threads) {
        t.join();
    }
}

BOOST_AUTO_TEST_SUITE(blocking_threads)

BOOST_AUTO_TEST_CASE(threads_sharing_one_mutex_through_unique_lock_never_overlap)
{
    redlock::test::redis_cluster nodes(3);
    redlock::blocking::client c(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::mutex m = c.make_mutex("threads:shared", {.expiry = 10s});
    constexpr int workers = 6;
    constexpr int rounds = 8;
    int counter = 0;  // protected by m alone
    occupancy occ;
    failures failed;
    std::vector<std::thread> threads;
    for (int i = 0; i < workers; ++i) {
        threads.emplace_back([&] {
            try {
                for (int round = 0; round < rounds; ++round) {
                    std::unique_lock held(m);
                    occ.enter();
                    const int read = counter;
                    std::this_thread::yield();  // widen the window a second holder would hit
                    counter = read + 1;
                    occ.leave();
                }
            } catch (const std::exception& e) {
                failed.note(e);
            }
        });
    }
    join_all(threads);
    BOOST_TEST(failed.count.load() == 0, failed.first);
    BOOST_TEST(counter == workers * rounds);
    BOOST_TEST(occ.most.load() == 1);
    BOOST_TEST(!m.owns_lock());
}

BOOST_AUTO_TEST_CASE(threads_with_their_own_mutexes_on_two_clients_never_overlap)
{
    // Two clients stand for two processes: their only common ground is the Redis nodes.
    redlock::test::redis_cluster nodes(3);
    redlock::blocking::client first(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::client second(redlock::config::from_urls(nodes.urls()));
    const redlock::options opts{.expiry = 10s, .tries = 100000, .retry_delay = 5ms};
    constexpr int per_client = 3;
    constexpr int rounds = 6;
    // Split into a load and a store, so that two holders at once would lose an increment.
    std::atomic<int> counter{0};
    occupancy occ;
    failures failed;
    std::vector<std::thread> threads;
    for (redlock::blocking::client* c : {&first, &second}) {
        for (int i = 0; i < per_client; ++i) {
            threads.emplace_back([&, m = c->make_mutex("threads:own", opts)]() mutable {
                try {
                    for (int round = 0; round < rounds; ++round) {
                        std::lock_guard held(m);
                        occ.enter();
                        const int read = counter.load(std::memory_order_relaxed);
                        std::this_thread::yield();
                        counter.store(read + 1, std::memory_order_relaxed);
                        occ.leave();
                    }
                } catch (const std::exception& e) {
                    failed.note(e);
                }
            });
        }
    }
    join_all(threads);
    BOOST_TEST(failed.count.load() == 0, failed.first);
    BOOST_TEST(counter.load() == 2 * per_client * rounds);
    BOOST_TEST(occ.most.load() == 1);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redlock::test::eventually(
            [&] { return !redlock::test::redis_get(nodes[i].port(), "threads:own").has_value(); }));
    }
}

BOOST_AUTO_TEST_CASE(try_lock_for_times_out_while_another_thread_holds_the_lock)
{
    redlock::test::redis_cluster nodes(3);
    redlock::blocking::client c(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::mutex shared = c.make_mutex("threads:timeout", {.expiry = 10s});
    redlock::blocking::mutex other = c.make_mutex("threads:timeout", {.expiry = 10s});
    std::promise<void> locked;
    std::promise<void> done;
    std::thread holder([&] {
        std::lock_guard held(shared);
        locked.set_value();
        done.get_future().wait();
    });
    locked.get_future().wait();

    // The same mutex: this thread waits for its turn in the process.
    auto start = steady::now();
    BOOST_TEST(!shared.try_lock());
    BOOST_TEST(!shared.try_lock_for(300ms));
    auto waited = steady::now() - start;
    BOOST_TEST((waited >= 300ms));
    BOOST_TEST((waited < 2s));
    // Another mutex of the same name: the nodes say no until the deadline.
    start = steady::now();
    BOOST_TEST(!other.try_lock_for(300ms));
    waited = steady::now() - start;
    BOOST_TEST((waited >= 300ms));
    BOOST_TEST((waited < 2s));
    BOOST_TEST(other.last_report().count(redlock::node_status::taken) >= 2u);

    done.set_value();
    holder.join();
    BOOST_TEST(shared.try_lock_for(5s));
    shared.unlock();
}

BOOST_AUTO_TEST_CASE(destroying_the_client_ends_the_waits_of_other_threads_and_releases)
{
    redlock::test::redis_cluster nodes(3);
    auto c = std::make_unique<redlock::blocking::client>(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::mutex held = c->make_mutex("threads:end", {.expiry = 30s});
    // Waits on the nodes, with a retry delay far beyond the test's patience.
    redlock::blocking::mutex waiting =
        c->make_mutex("threads:end", {.expiry = 30s, .tries = 1000, .retry_delay = 60s});
    held.lock();

    auto outcome = [](redlock::blocking::mutex m) {
        try {
            m.lock();
            return boost::system::error_code{};
        } catch (const boost::system::system_error& e) {
            return e.code();
        }
    };
    auto on_nodes = std::async(std::launch::async, outcome, waiting);
    auto in_process = std::async(std::launch::async, outcome, held);  // waits for its turn
    // The first waiter is in its retry pause once it listens for the release.
    const std::string channel = "redlock:released:threads:end";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST_REQUIRE(redlock::test::eventually([&] {
            return redlock::test::redis_command(nodes[i].port(), {"PUBSUB", "NUMSUB", channel}) ==
                   channel + " 1";
        }));
    }

    const auto start = steady::now();
    c.reset();
    BOOST_TEST((steady::now() - start < 10s));
    BOOST_TEST_REQUIRE((on_nodes.wait_for(5s) == std::future_status::ready));
    BOOST_TEST_REQUIRE((in_process.wait_for(5s) == std::future_status::ready));
    BOOST_TEST((on_nodes.get() == redlock::error::shut_down));
    BOOST_TEST((in_process.get() == redlock::error::shut_down));
    // The lock this thread held is gone from every node: the destructor waited for it.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(!redlock::test::redis_get(nodes[i].port(), "threads:end").has_value());
    }
    BOOST_TEST(!held.owns_lock());
    held.unlock();  // after the client: nothing to do
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(blocking_semaphore_threads)

BOOST_AUTO_TEST_CASE(threads_on_two_clients_never_hold_more_permits_than_there_are)
{
    redlock::test::redis_cluster nodes(3);
    redlock::blocking::client first(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::client second(redlock::config::from_urls(nodes.urls()));
    const redlock::options opts = retrying_apart();
    constexpr int per_client = 3;
    constexpr int rounds = 6;
    occupancy occ;
    failures failed;
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    std::vector<redlock::blocking::semaphore> semaphores{
        first.make_semaphore("threads:pool", 2, opts),
        second.make_semaphore("threads:pool", 2, opts)};
    for (int i = 0; i < 2 * per_client; ++i) {
        // The threads of a client share its semaphore object.
        threads.emplace_back([&, &s = semaphores[static_cast<std::size_t>(i % 2)]] {
            try {
                for (int round = 0; round < rounds; ++round) {
                    s.acquire();
                    occ.enter();
                    std::this_thread::sleep_for(2ms);
                    occ.leave();
                    s.release();
                    ++done;
                }
            } catch (const std::exception& e) {
                failed.note(e);
            }
        });
    }
    join_all(threads);
    BOOST_TEST(failed.count.load() == 0, failed.first);
    BOOST_TEST(done.load() == 2 * per_client * rounds);
    BOOST_TEST(occ.most.load() <= 2);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redlock::test::eventually([&] {
            return redlock::test::redis_command(nodes[i].port(), {"EXISTS", "threads:pool"}) == "0";
        }));
    }
}

BOOST_AUTO_TEST_CASE(a_thread_gives_back_only_its_own_permits_and_wakes_a_waiting_thread)
{
    redlock::test::redis_cluster nodes(1);
    redlock::blocking::client c(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::semaphore s = c.make_semaphore("threads:slots", 1, {.expiry = 10s});
    s.acquire();
    // Another thread holds no permit: it cannot give this thread's back, and waits for it.
    auto other = std::async(std::launch::async, [&] {
        boost::system::error_code refused;
        try {
            s.release();
        } catch (const boost::system::system_error& e) {
            refused = e.code();
        }
        const bool got = s.try_acquire_for(5s);
        const std::size_t held = s.held();
        if (got) {
            s.release();
        }
        return std::make_tuple(refused, got, held);
    });
    std::this_thread::sleep_for(200ms);  // the other thread waits meanwhile, or not yet
    BOOST_TEST(s.held() == 1u);
    s.release();
    const auto [refused, got, held] = other.get();
    BOOST_TEST((refused == redlock::error::not_held));
    BOOST_TEST(got);
    BOOST_TEST(held == 1u);
    BOOST_TEST(s.held() == 0u);
}

BOOST_AUTO_TEST_CASE(destroying_the_client_ends_waits_for_permits_and_gives_them_back)
{
    redlock::test::redis_cluster nodes(3);
    auto c = std::make_unique<redlock::blocking::client>(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::semaphore held = c->make_semaphore("threads:full", 1, {.expiry = 30s});
    redlock::blocking::semaphore waiting =
        c->make_semaphore("threads:full", 1, {.expiry = 30s, .tries = 1000, .retry_delay = 60s});
    held.acquire();
    auto outcome = std::async(std::launch::async, [waiting]() mutable {
        try {
            waiting.acquire();
            return boost::system::error_code{};
        } catch (const boost::system::system_error& e) {
            return e.code();
        }
    });
    // The waiter is in its retry pause once it listens for the release.
    const std::string channel = "redlock:released:threads:full";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST_REQUIRE(redlock::test::eventually([&] {
            return redlock::test::redis_command(nodes[i].port(), {"PUBSUB", "NUMSUB", channel}) ==
                   channel + " 1";
        }));
    }
    c.reset();
    BOOST_TEST_REQUIRE((outcome.wait_for(5s) == std::future_status::ready));
    BOOST_TEST((outcome.get() == redlock::error::shut_down));
    // The permit this thread held is gone from every node: the destructor waited for it.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redlock::test::redis_command(nodes[i].port(), {"EXISTS", "threads:full"}) ==
                   "0");
    }
    BOOST_TEST(held.held() == 0u);
    BOOST_CHECK_THROW(held.release(), boost::system::system_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(blocking_rw_mutex_threads)

BOOST_AUTO_TEST_CASE(readers_and_writers_on_two_clients_through_shared_and_unique_locks)
{
    redlock::test::redis_cluster nodes(3);
    redlock::blocking::client first(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::client second(redlock::config::from_urls(nodes.urls()));
    const redlock::options opts = retrying_apart();
    // The threads of a client share its object, as threads share a std::shared_mutex.
    std::vector<redlock::blocking::rw_mutex> locks{first.make_rw_mutex("threads:table", opts),
                                                   second.make_rw_mutex("threads:table", opts)};
    constexpr int writers = 2;
    constexpr int readers = 4;
    constexpr int rounds = 5;
    int counter = 0;  // written by writers only while they hold the lock
    std::atomic<int> reading{0};
    std::atomic<int> writing{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> most_readers{0};
    failures failed;
    std::vector<std::thread> threads;
    for (int i = 0; i < writers + readers; ++i) {
        auto& m = locks[static_cast<std::size_t>(i % 2)];
        threads.emplace_back([&, i] {
            try {
                for (int round = 0; round < rounds; ++round) {
                    if (i < writers) {
                        std::unique_lock held(m);
                        overlaps += (++writing != 1 || reading.load() != 0) ? 1 : 0;
                        const int read = counter;
                        std::this_thread::yield();  // widen the window a second holder would hit
                        counter = read + 1;
                        --writing;
                    } else {
                        std::shared_lock held(m);
                        const int now = ++reading;
                        int seen = most_readers.load();
                        while (now > seen && !most_readers.compare_exchange_weak(seen, now)) {
                        }
                        overlaps += writing.load() != 0 ? 1 : 0;
                        const int before = counter;
                        std::this_thread::sleep_for(2ms);
                        overlaps += counter != before ? 1 : 0;
                        --reading;
                    }
                }
            } catch (const std::exception& e) {
                failed.note(e);
            }
        });
    }
    join_all(threads);
    BOOST_TEST(failed.count.load() == 0, failed.first);
    BOOST_TEST(overlaps.load() == 0);
    BOOST_TEST(counter == writers * rounds);
    BOOST_TEST(most_readers.load() >= 1);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(redlock::test::eventually([&] {
            return redlock::test::redis_command(nodes[i].port(), {"EXISTS", "threads:table"}) ==
                   "0";
        }));
    }
}

BOOST_AUTO_TEST_CASE(several_threads_hold_one_object_shared_at_once)
{
    redlock::test::redis_cluster nodes(1);
    redlock::blocking::client c(redlock::config::from_urls(nodes.urls()));
    redlock::blocking::rw_mutex m = c.make_rw_mutex("threads:shared-read", {.expiry = 10s});
    constexpr int threads_count = 4;
    std::atomic<int> holding{0};
    std::promise<void> all_in;
    std::shared_future<void> go = all_in.get_future().share();
    failures failed;
    std::vector<std::thread> threads;
    for (int i = 0; i < threads_count; ++i) {
        threads.emplace_back([&] {
            try {
                std::shared_lock held(m);
                if (++holding == threads_count) {
                    all_in.set_value();
                }
                // Each holds until all hold: with one holder at a time this would never end.
                if (go.wait_for(10s) != std::future_status::ready) {
                    throw std::runtime_error("the readers never held the lock together");
                }
            } catch (const std::exception& e) {
                failed.note(e);
            }
        });
    }
    join_all(threads);
    BOOST_TEST(failed.count.load() == 0, failed.first);
    BOOST_TEST(holding.load() == threads_count);
    BOOST_TEST(redlock::test::redis_command(nodes[0].port(), {"EXISTS", "threads:shared-read"}) ==
               "0");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
