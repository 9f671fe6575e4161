// SPDX-License-Identifier: BSL-1.0
// cancel_on_loss: a request handler whose work is cancelled when its lock is lost.
//
//   cancel_on_loss URL [URL...]      e.g. cancel_on_loss redis://127.0.0.1:7001 ...
//
// The handler exports a resource chunk by chunk (each chunk an asynchronous step) under that
// resource's lock, through redlock::with_lock. The work never looks at the lock itself. Two runs:
//
//   (a) expiry 1 s with the watchdog (auto_extend): the 3 s of work complete, because the lock
//       is extended about every 333 ms; the result is printed.
//   (b) the same job without the watchdog: the lock's validity runs out after about 1 s, so
//       with_lock cancels the work (its pending step completes with operation_aborted) and
//       throws error::lost.
//
// Exit status 0 when (a) completed with its result and (b) ended with error::lost after the
// work saw the cancellation; 1 otherwise; 2 for bad arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

constexpr int chunks = 12;
constexpr auto chunk_time = 250ms;  // 12 chunks: 3 s of work

long long ms(steady::duration d)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// What the work says about itself, for the log and the final check.
struct job_log
{
    int chunks_done = 0;
    bool saw_cancellation = false;
    steady::duration ran_for{};
};

// The handler: exports `resource` under the lock "export:<resource>". with_lock acquires the
// lock, runs the work and releases the lock. If the lock is lost first, the work's coroutine is
// cancelled: the pending step throws operation_aborted, and with_lock throws error::lost.
asio::awaitable<int> export_job(redlock::client& locks, std::string resource, redlock::options opts,
                                job_log& log)
{
    redlock::mutex lock = locks.make_mutex("export:" + resource, std::move(opts));
    co_return co_await redlock::with_lock(lock, [&](redlock::guard& g) -> asio::awaitable<int> {
        const auto start = steady::now();
        asio::steady_timer step(co_await asio::this_coro::executor);
        try {
            for (int i = 1; i <= chunks; ++i) {
                step.expires_after(chunk_time);  // stands in for one chunk's asynchronous I/O
                co_await step.async_wait(asio::use_awaitable);
                log.chunks_done = i;
                // For the log only (the work does not check the lock); reading until() while
                // the watchdog runs is fine here because one thread runs everything.
                std::cout << "  chunk " << i << "/" << chunks << " at " << ms(steady::now() - start)
                          << " ms, lock valid for another " << ms(g.until() - steady::now())
                          << " ms\n";
            }
        } catch (const boost::system::system_error& e) {
            log.ran_for = steady::now() - start;
            log.saw_cancellation = e.code() == asio::error::operation_aborted;
            // A real handler would undo its partial export here.
            throw;
        }
        log.ran_for = steady::now() - start;
        co_return log.chunks_done;
    });
}

asio::awaitable<bool> demo(redlock::client& locks)
{
    bool ok = true;

    const redlock::options watched{.expiry = 1s, .auto_extend = true};
    std::cout << "(a) export q3 with the watchdog: expiry 1 s, " << chunks << " chunks of "
              << ms(chunk_time) << " ms\n";
    job_log a;
    try {
        const int exported = co_await export_job(locks, "q3", watched, a);
        std::cout << "completed: " << exported << " chunks exported in " << ms(a.ran_for)
                  << " ms under a lock with a 1 s expiry\n";
        if (exported != chunks) {
            std::cout << "FAILED: expected " << chunks << " chunks\n";
            ok = false;
        }
    } catch (const boost::system::system_error& e) {
        std::cout << "FAILED: " << e.code().message() << " (after " << a.chunks_done
                  << " chunks)\n";
        ok = false;
    }

    const redlock::options unwatched{.expiry = 1s};
    std::cout << "(b) export q4 without the watchdog: the validity (about 1 s) runs out "
                 "mid-work\n";
    job_log b;
    try {
        const int exported = co_await export_job(locks, "q4", unwatched, b);
        std::cout << "FAILED: completed (" << exported << " chunks) although the lock expired\n";
        ok = false;
    } catch (const boost::system::system_error& e) {
        if (e.code() == redlock::error::lost && b.saw_cancellation) {
            std::cout << "lost: work cancelled after " << ms(b.ran_for) << " ms (" << b.chunks_done
                      << " of " << chunks << " chunks done)\n";
        } else {
            std::cout << "FAILED: expected error::lost and a cancelled work, got '"
                      << e.code().message() << "', work "
                      << (b.saw_cancellation ? "cancelled" : "not cancelled") << "\n";
            ok = false;
        }
    }
    co_return ok;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cerr << "usage: cancel_on_loss URL [URL...]   e.g. cancel_on_loss "
                     "redis://127.0.0.1:6379\n";
        return 2;
    }
    const std::vector<std::string> urls(argv + 1, argv + argc);

    asio::io_context io;
    std::optional<redlock::client> locks;
    try {
        locks.emplace(io.get_executor(), redlock::config::from_urls(urls));
    } catch (const boost::system::system_error& e) {
        std::cerr << "cancel_on_loss: " << e.what() << "\n";
        return 2;
    }

    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            std::exception_ptr failure;
            try {
                status = co_await demo(*locks) ? 0 : 1;
            } catch (...) {
                failure = std::current_exception();
            }
            // (b) left its guard to release in the background; this waits for that release.
            co_await locks->async_shutdown();
            if (failure) {
                std::rethrow_exception(failure);
            }
        },
        [](std::exception_ptr e) {
            if (!e) {
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::cerr << "cancel_on_loss: " << ex.what() << "\n";
            }
        });
    io.run();
    return status;
}
