// SPDX-License-Identifier: BSL-1.0
// lock_events: a client's lock events (config::observer), printed as they come, as
// docs/observability.md shows.
//
//   lock_events URL [URL...]
//
// Acquires the lock "report", extends and releases it; another client then holds it while
// this one's try_acquire is refused. Prints each event, and checks that they were acquired,
// extended, released, acquire_failed (taken), in that order. Exit status 0 when they were,
// 1 otherwise, 2 for bad arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cerr << "usage: lock_events URL [URL...]\n";
        return 2;
    }
    const std::vector<std::string> urls(argv + 1, argv + argc);
    std::vector<redlock::lock_event_kind> seen;

    auto cfg = redlock::config::from_urls(urls);
    // On the client's strand: quick, and never blocking.
    cfg.observer = [&seen](const redlock::lock_event& e) {
        std::clog << e.type << ' ' << e.name << ' ' << redlock::to_string(e.kind) << " after "
                  << std::chrono::duration<double, std::milli>(e.elapsed).count() << " ms";
        if (e.error) {
            std::clog << ": " << e.error.message();
        }
        std::clog << '\n';
        seen.push_back(e.kind);
    };

    asio::io_context io;
    redlock::client observed(io.get_executor(), cfg);
    redlock::client other(io.get_executor(), redlock::config::from_urls(urls));
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            redlock::guard g = co_await observed.make_mutex("report").acquire();
            co_await g.extend();
            co_await g.release();
            redlock::guard theirs = co_await other.make_mutex("report").acquire();
            auto [ec, none] = co_await observed.make_mutex("report").async_try_acquire(
                asio::as_tuple(asio::deferred));
            co_await theirs.release();
            co_await observed.async_shutdown();
            co_await other.async_shutdown();
        },
        asio::detached);
    io.run();

    using kind = redlock::lock_event_kind;
    const std::vector<kind> expected{kind::acquired, kind::extended, kind::released,
                                     kind::acquire_failed};
    return seen == expected ? 0 : 1;
}
