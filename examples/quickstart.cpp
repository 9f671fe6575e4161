// SPDX-License-Identifier: BSL-1.0
// quickstart: the "first program" of the documentation, complete.
//
//   quickstart URL [URL...]      e.g. quickstart redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//
// One URL gives the single-instance lock; several independent masters give Redlock. Acquires
// the lock "order:42", extends it, checks it, releases it, then shuts the client down.
// Exit status 0 on success, 1 when a lock operation fails, 2 for bad arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

long long ms_left(const redlock::guard& g)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(g.until() -
                                                                 std::chrono::steady_clock::now())
        .count();
}

asio::awaitable<void> reserve(redlock::client& locks, std::string order)
{
    redlock::mutex lock = locks.make_mutex("order:" + order, {.expiry = 10s});
    std::cout << "acquiring " << lock.name() << " (expiry 10 s)\n";
    redlock::guard g;
    try {
        g = co_await lock.acquire();  // retries per options, throws on failure
    } catch (const boost::system::system_error&) {
        std::cerr << "acquire failed; what each node answered:\n" << lock.last_report().to_string();
        throw;
    }
    std::cout << "acquired: owner value " << g.value() << ", valid for " << ms_left(g) << " ms\n"
              << g.last_report().to_string();

    // ... the critical section: valid until g.until() ...

    co_await g.extend();  // reset the TTL to the expiry on a quorum
    std::cout << "extended: valid for " << ms_left(g) << " ms\n";

    bool held = co_await g.valid();  // does a quorum still hold our value?
    std::cout << "valid: " << (held ? "yes" : "no") << "\n";
    if (!held) {
        throw std::runtime_error("the lock was lost before its release:\n" +
                                 g.last_report().to_string());
    }

    co_await g.release();  // without it, ~guard would schedule the release
    std::cout << "released\n";
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cerr << "usage: quickstart URL [URL...]   e.g. quickstart redis://127.0.0.1:6379\n";
        return 2;
    }
    const std::vector<std::string> urls(argv + 1, argv + argc);

    asio::io_context io;
    std::optional<redlock::client> locks;
    try {
        locks.emplace(io.get_executor(), redlock::config::from_urls(urls));
    } catch (const boost::system::system_error& e) {
        std::cerr << "quickstart: " << e.what() << "\n";
        return 2;
    }

    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            std::exception_ptr failure;
            try {
                co_await reserve(*locks, "42");
                status = 0;
            } catch (...) {
                failure = std::current_exception();
            }
            // Waits for any release a guard destructor scheduled, then closes connections.
            co_await locks->async_shutdown();
            std::cout << "client shut down\n";
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
            } catch (const boost::system::system_error& se) {
                std::cerr << "quickstart: " << se.code().message() << "\n";
            } catch (const std::exception& ex) {
                std::cerr << "quickstart: " << ex.what() << "\n";
            }
        });
    io.run();
    return status;
}
