// SPDX-License-Identifier: BSL-1.0
// worker_pool: a pool of workers that run jobs on a resource that takes at most a few users at
// once (a GPU, a rate-limited API), bounded by a redlock::semaphore.
//
//   worker_pool [--permits L] [--workers W] [--jobs J] URL [URL...]
//
// Two clients stand for two processes of a service; each runs W workers. Every job takes a
// permit of the semaphore "gpu" (with_lock: acquire, run, release), counts how many jobs are
// inside at once, and works 20 ms. Prints the most jobs seen inside at once, which must not
// exceed L, and the number of nodes a permit needs (semaphore::quorum()).
// Exit status 0 when every job ran and never more than L at once, 1 otherwise, 2 for bad
// arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct settings
{
    int permits = 2;
    int workers = 4;
    int jobs = 40;
    std::vector<std::string> urls;
};

std::optional<int> positive(std::string_view text)
{
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < 1) {
        return std::nullopt;
    }
    return value;
}

std::optional<settings> parse(int argc, char** argv)
{
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        int* target = arg == "--permits"   ? &s.permits
                      : arg == "--workers" ? &s.workers
                      : arg == "--jobs"    ? &s.jobs
                                           : nullptr;
        if (target) {
            if (i + 1 == argc) {
                return std::nullopt;
            }
            const auto value = positive(argv[++i]);
            if (!value) {
                return std::nullopt;
            }
            *target = *value;
        } else {
            s.urls.emplace_back(arg);
        }
    }
    if (s.urls.empty()) {
        return std::nullopt;
    }
    return s;
}

// What the workers of both clients see, on one io_context (one thread).
struct pool_state
{
    int next_job = 0;
    int jobs = 0;
    int inside = 0;
    int most_inside = 0;
    int done = 0;
};

// One worker: takes jobs until there are none left, each under a permit.
asio::awaitable<void> worker(redlock::semaphore gpu, pool_state& pool)
{
    asio::steady_timer work(co_await asio::this_coro::executor);
    while (pool.next_job < pool.jobs) {
        ++pool.next_job;
        co_await redlock::with_lock(gpu, [&](redlock::guard&) -> asio::awaitable<void> {
            pool.most_inside = std::max(pool.most_inside, ++pool.inside);
            work.expires_after(20ms);  // the job itself
            co_await work.async_wait(asio::use_awaitable);
            --pool.inside;
        });
        ++pool.done;
    }
}

// Many tries with short random delays: the workers of the pool keep coming back for permits.
redlock::options pool_options()
{
    return {.expiry = 10s, .tries = 10000, .retry_delay = [](int) {
                thread_local std::minstd_rand engine{std::random_device{}()};
                return std::chrono::milliseconds(std::uniform_int_distribution<int>(2, 30)(engine));
            }};
}

int run(const settings& s)
{
    asio::io_context io;
    const auto cfg = redlock::config::from_urls(s.urls);
    redlock::client first(io.get_executor(), cfg);
    redlock::client second(io.get_executor(), cfg);
    const auto opts = pool_options();
    const std::vector<redlock::semaphore> semaphores{first.make_semaphore("gpu", s.permits, opts),
                                                     second.make_semaphore("gpu", s.permits, opts)};
    std::cout << "semaphore " << semaphores[0].name() << ": " << s.permits << " permits over "
              << s.urls.size() << " node(s), each permit needs " << semaphores[0].quorum()
              << " node(s)\n";

    pool_state pool;
    pool.jobs = s.jobs;
    std::exception_ptr failure;
    const auto started = std::chrono::steady_clock::now();
    for (int w = 0; w < 2 * s.workers; ++w) {
        asio::co_spawn(io, worker(semaphores[static_cast<std::size_t>(w % 2)], pool),
                       [&failure](std::exception_ptr e) {
                           if (e && !failure) {
                               failure = e;
                           }
                       });
    }
    io.run();
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    if (failure) {
        std::rethrow_exception(failure);
    }
    std::cout << pool.done << " of " << pool.jobs << " jobs done by " << 2 * s.workers
              << " workers in " << took.count() << " ms; at most " << pool.most_inside
              << " inside at once (limit " << s.permits << ")\n";
    return pool.done == pool.jobs && pool.most_inside <= s.permits ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv)
{
    const std::optional<settings> s = parse(argc, argv);
    if (!s) {
        std::cerr << "usage: worker_pool [--permits L] [--workers W] [--jobs J] URL [URL...]\n";
        return 2;
    }
    try {
        return run(*s);
    } catch (const boost::system::system_error& e) {
        std::cerr << "worker_pool: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "worker_pool: " << e.what() << "\n";
        return 1;
    }
}
