// SPDX-License-Identifier: BSL-1.0
// A program built against redlock the way a user builds one (tests/packaging/consume.sh):
// it checks the version header against the version it is told, then locks against a real
// redis-server: acquire, a second owner's try_acquire refused with error::taken, release, and
// the second owner's try_acquire granted (two clients: two owners). Exit status 0 when all of
// that holds.
//
//   consumer VERSION redis://127.0.0.1:PORT
#include <redlock/redlock.hpp>
#include <redlock/version.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

namespace asio = boost::asio;
using namespace std::chrono_literals;

static_assert(REDLOCK_VERSION ==
              REDLOCK_VERSION_MAJOR * 10000 + REDLOCK_VERSION_MINOR * 100 + REDLOCK_VERSION_PATCH);

namespace {

void check(bool condition, const std::string& what)
{
    if (!condition) {
        throw std::runtime_error(what);
    }
}

asio::awaitable<void> lock_and_contend(redlock::client& one, redlock::client& other)
{
    redlock::mutex first = one.make_mutex("consumer", {.expiry = 10s});
    redlock::mutex second = other.make_mutex("consumer", {.expiry = 10s});

    redlock::guard held = co_await first.acquire();
    check(co_await held.valid(),
          "the acquired lock is not valid:\n" + held.last_report().to_string());
    std::cout << "acquired\n";

    auto [busy, none] = co_await second.async_try_acquire(asio::as_tuple(asio::deferred));
    check(busy == redlock::error::taken,
          "a second owner's try_acquire gave '" + busy.message() + "' instead of error::taken");
    std::cout << "second owner refused: " << busy.message() << "\n";

    co_await held.release();
    redlock::guard next = co_await second.try_acquire();
    std::cout << "released; second owner acquired\n";
    co_await next.release();
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::cerr << "usage: consumer VERSION redis://127.0.0.1:PORT\n";
        return 2;
    }
    std::cout << "redlock " << REDLOCK_VERSION_STRING << "\n";
    if (std::string_view(argv[1]) != REDLOCK_VERSION_STRING) {
        std::cerr << "consumer: built with redlock " << REDLOCK_VERSION_STRING << ", expected "
                  << argv[1] << "\n";
        return 1;
    }

    asio::io_context io;
    const auto config = redlock::config::from_urls({argv[2]});
    redlock::client one(io.get_executor(), config);
    redlock::client other(io.get_executor(), config);
    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            std::exception_ptr failure;
            try {
                co_await lock_and_contend(one, other);
            } catch (...) {
                failure = std::current_exception();
            }
            co_await one.async_shutdown();
            co_await other.async_shutdown();
            if (failure) {
                std::rethrow_exception(failure);
            }
            status = 0;
        },
        [](std::exception_ptr e) {
            if (!e) {
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::cerr << "consumer: " << ex.what() << "\n";
            }
        });
    io.run();
    return status;
}
