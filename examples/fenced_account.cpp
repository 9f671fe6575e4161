// SPDX-License-Identifier: BSL-1.0
// fenced_account: why fencing tokens matter, in one run.
//
//   fenced_account RESOURCE_URL NODE_URL [NODE_URL...]
//
// The resource (an account balance) lives in its own Redis server, behind a
// redlock::fenced_store; the lock lives on the nodes. Worker A takes the lock, reads the
// balance, and then stalls past its lock's expiry (as a long GC pause or a stopped VM
// would make it). Worker B takes the lock, deposits 10 and leaves. A wakes up and writes
// the deposit it had computed from its old read. Without fencing that write would erase
// B's deposit; with it, the store refuses A's write because B's token is newer.
//
// Exit status 0 when the store refused the stale write and the balance is B's, 1 otherwise,
// 2 for bad arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
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

constexpr auto as_tuple = asio::as_tuple(asio::use_awaitable);
const std::string account = "account:7";

long balance_of(const std::optional<std::string>& stored)
{
    return stored ? std::stol(*stored) : 0;
}

asio::awaitable<bool> demo(redlock::client& a_locks, redlock::client& b_locks,
                           redlock::fenced_store& store)
{
    const redlock::options opts{.expiry = 500ms, .retry_delay = 20ms, .fencing = true};
    redlock::mutex a_lock = a_locks.make_mutex(account, opts);
    redlock::mutex b_lock = b_locks.make_mutex(account, opts);

    redlock::guard a = co_await a_lock.acquire();
    const long a_read = balance_of(co_await store.async_read(account, a, asio::use_awaitable));
    std::cout << "A holds the lock with token " << a.fencing_token() << " and reads " << a_read
              << "\n";

    // A stalls until its lock has expired on every node (a pause it does not notice).
    asio::steady_timer stall(co_await asio::this_coro::executor, a.until() + opts.expiry);
    co_await stall.async_wait(asio::use_awaitable);
    std::cout << "A was paused for longer than its lock's expiry\n";

    {
        redlock::guard b = co_await b_lock.acquire();
        const long b_read = balance_of(co_await store.async_read(account, b, asio::use_awaitable));
        co_await store.async_write(account, std::to_string(b_read + 10), b, asio::use_awaitable);
        std::cout << "B holds the lock with token " << b.fencing_token() << ", reads " << b_read
                  << " and writes " << b_read + 10 << "\n";
        co_await b.release();
    }

    // A resumes and writes what it computed before its pause.
    auto [ec] = co_await store.async_write(account, std::to_string(a_read + 5), a, as_tuple);
    std::cout << "A writes " << a_read + 5 << " with token " << a.fencing_token() << ": "
              << (ec ? ec.message() : std::string("accepted")) << "\n";
    co_await a.async_release(as_tuple);  // not_held: the lock expired long ago

    // Reading the balance is work under the lock too.
    redlock::guard audit = co_await b_lock.acquire();
    const long balance = balance_of(co_await store.async_read(account, audit, asio::use_awaitable));
    co_await audit.release();
    std::cout << "final balance: " << balance << "\n";
    co_return ec == redlock::error::stale_token&& balance == 10;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 3) {
        std::cerr << "usage: fenced_account RESOURCE_URL NODE_URL [NODE_URL...]\n";
        return 2;
    }
    const std::vector<std::string> nodes(argv + 2, argv + argc);
    asio::io_context io;
    try {
        // Two clients with their own connections, as two processes would have.
        redlock::client a_locks(io.get_executor(), redlock::config::from_urls(nodes));
        redlock::client b_locks(io.get_executor(), redlock::config::from_urls(nodes));
        redlock::fenced_store store(io.get_executor(), redlock::config::from_urls({argv[1]}));
        bool ok = false;
        asio::co_spawn(io, demo(a_locks, b_locks, store), [&](std::exception_ptr e, bool result) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    std::cerr << "fenced_account: " << x.what() << "\n";
                }
            }
            ok = result;
            a_locks.async_shutdown([](boost::system::error_code) {});
            b_locks.async_shutdown([](boost::system::error_code) {});
        });
        io.run();
        std::cout << (ok ? "the stale write was refused: no update lost\n"
                         : "FAILED: the stale write was not refused\n");
        return ok ? 0 : 1;
    } catch (const boost::system::system_error& e) {
        std::cerr << "fenced_account: " << e.what() << "\n";
        return 2;
    }
}
