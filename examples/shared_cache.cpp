// SPDX-License-Identifier: BSL-1.0
// shared_cache: a cache that many read and one refreshes, under a redlock::rw_mutex.
//
//   shared_cache URL [URL...]
//
// Two clients stand for two processes of a service. Their readers look up the cached price
// list under a shared lock (acquire_shared), many at once; a refresher of each client rebuilds
// it now and then under the exclusive lock (with_lock), in two steps with a pause between, as
// a real rebuild writes piece by piece. A reader that saw a half-rebuilt list (the version of
// one rebuild with the prices of another) would be a torn read; the read-write lock prevents
// it, and a refresher that waits keeps new readers out, so the refreshes are not starved.
// Prints the reads, the refreshes, the most readers that held the lock at once and the torn
// reads. Exit status 0 when every refresh was done, readers overlapped and no read was torn;
// 1 otherwise, 2 for bad arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr int readers_per_client = 6;
constexpr int reads_per_reader = 15;
constexpr int refreshes_per_client = 3;

// The cache both clients share (on one io_context here; in a service, the cache service or a
// file that each process reads).
struct price_cache
{
    int version = 0;
    std::string prices = "prices of version 0";
};

struct tally
{
    int reads = 0;
    int refreshes = 0;
    int reading = 0;
    int most_reading = 0;
    int torn = 0;
};

asio::awaitable<void> pause_for(std::chrono::milliseconds d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

// Looks the prices up under a shared lock, a few milliseconds each time.
asio::awaitable<void> reader(redlock::rw_mutex lock, const price_cache& cache, tally& t)
{
    for (int i = 0; i < reads_per_reader; ++i) {
        redlock::guard g = co_await lock.acquire_shared();
        t.most_reading = std::max(t.most_reading, ++t.reading);
        const int version = cache.version;
        co_await pause_for(5ms);  // the lookup
        if (cache.prices != "prices of version " + std::to_string(version)) {
            ++t.torn;
        }
        --t.reading;
        ++t.reads;
        co_await g.release();
    }
}

// Rebuilds the cache under the exclusive lock: the version first, the prices 10 ms later.
asio::awaitable<void> refresher(redlock::rw_mutex lock, price_cache& cache, tally& t)
{
    for (int i = 0; i < refreshes_per_client; ++i) {
        co_await pause_for(20ms);
        co_await redlock::with_lock(lock, [&](redlock::guard&) -> asio::awaitable<void> {
            const int next = cache.version + 1;
            cache.version = next;
            co_await pause_for(10ms);
            cache.prices = "prices of version " + std::to_string(next);
        });
        ++t.refreshes;
    }
}

// Short random retry delays: the readers and refreshers keep coming back.
redlock::options cache_options()
{
    return {.expiry = 10s, .tries = 10000, .retry_delay = [](int) {
                thread_local std::minstd_rand engine{std::random_device{}()};
                return std::chrono::milliseconds(std::uniform_int_distribution<int>(2, 30)(engine));
            }};
}

int run(const std::vector<std::string>& urls)
{
    asio::io_context io;
    const auto cfg = redlock::config::from_urls(urls);
    redlock::client first(io.get_executor(), cfg);
    redlock::client second(io.get_executor(), cfg);
    const std::vector<redlock::rw_mutex> locks{first.make_rw_mutex("prices", cache_options()),
                                               second.make_rw_mutex("prices", cache_options())};
    price_cache cache;
    tally t;
    std::exception_ptr failure;
    const auto keep_first = [&failure](std::exception_ptr e) {
        if (e && !failure) {
            failure = e;
        }
    };
    for (const redlock::rw_mutex& lock : locks) {
        for (int r = 0; r < readers_per_client; ++r) {
            asio::co_spawn(io, reader(lock, cache, t), keep_first);
        }
        asio::co_spawn(io, refresher(lock, cache, t), keep_first);
    }
    io.run();
    if (failure) {
        std::rethrow_exception(failure);
    }
    std::cout << t.reads << " reads and " << t.refreshes << " refreshes over " << urls.size()
              << " node(s); at most " << t.most_reading << " readers at once; " << t.torn
              << " torn reads; cache at version " << cache.version << "\n";
    const bool all_done = t.refreshes == 2 * refreshes_per_client &&
                          t.reads == 2 * readers_per_client * reads_per_reader;
    return all_done && t.most_reading >= 2 && t.torn == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cerr << "usage: shared_cache URL [URL...]\n";
        return 2;
    }
    try {
        return run(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const std::exception& e) {
        std::cerr << "shared_cache: " << e.what() << "\n";
        return 1;
    }
}
