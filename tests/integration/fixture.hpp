// SPDX-License-Identifier: BSL-1.0
#pragma once

// Shared pieces of the integration tests: a cluster of real redis-servers per test case, and
// a bounded way to run a coroutine to completion.

#include <redlock/redlock.hpp>

#include "common/redis_server.hpp"

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// How Boost.Test prints the library's enums in failed assertions.
namespace redlock {
inline std::ostream& boost_test_print_type(std::ostream& os, error e)
{
    return os << make_error_code(e).message();
}
inline std::ostream& boost_test_print_type(std::ostream& os, node_status s)
{
    return os << to_string(s);
}
}  // namespace redlock
namespace boost::asio::error {
inline std::ostream& boost_test_print_type(std::ostream& os, basic_errors e)
{
    return os << make_error_code(e).message();
}
}  // namespace boost::asio::error

namespace redlock::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// Runs `op` on `io` until it completes or `limit` passes; a hang fails the test instead of
/// blocking the suite, and so does an exception out of the coroutine (Boost.Test would name
/// only the function that threw, not the test case).
template <class T>
T run(asio::io_context& io, asio::awaitable<T> op, std::chrono::milliseconds limit = 30s)
{
    std::optional<T> result;
    std::exception_ptr error;
    bool done = false;
    asio::co_spawn(io, std::move(op), [&](std::exception_ptr e, T value) {
        error = e;
        result.emplace(std::move(value));
        done = true;
    });
    io.restart();
    const auto deadline = steady::now() + limit;
    while (!done && steady::now() < deadline) {
        io.run_one_for(deadline - steady::now());
    }
    BOOST_REQUIRE_MESSAGE(done, "operation did not complete within " << limit.count() << " ms");
    if (error) {
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            BOOST_FAIL("the operation threw: " << e.what());
        }
    }
    return std::move(*result);
}

/// Whether the master on `master_port` streams its writes to a replica: after a full sync it
/// does so only once the replica acknowledged an offset on its own, which a replica does once
/// a second. Writes a key to have an offset to acknowledge. Poll it with `eventually`.
inline bool replica_streams(std::uint16_t master_port)
{
    redis_set(master_port, "replica-streams", "1");
    const std::string info = redis_command(master_port, {"INFO", "replication"});
    const auto at = info.find("state=online,offset=");
    return at != std::string::npos && info.compare(at + 20, 2, "0,") != 0;  // not offset 0
}

/// A count from INFO `section` (`field` ends with '='), 0 when the server does not list it.
inline long info_count(std::uint16_t port, const std::string& section, const std::string& field)
{
    const std::string info = redis_command(port, {"INFO", section});
    const auto at = info.find(field);
    if (at == std::string::npos) {
        return 0;
    }
    long count = 0;
    const char* first = info.data() + at + field.size();
    std::from_chars(first, info.data() + info.size(), count);
    return count;
}

/// How many times a node has run `command` (lower case, as INFO commandstats names it).
inline long command_calls(std::uint16_t port, std::string_view command)
{
    return info_count(port, "commandstats", "cmdstat_" + std::string(command) + ":calls=");
}

/// The node's clock in milliseconds, as the scripts read it (TIME).
inline long long server_ms(std::uint16_t port)
{
    std::istringstream in(redis_command(port, {"TIME"}));
    long long seconds = 0;
    long long micros = 0;
    in >> seconds >> micros;
    return seconds * 1000 + micros / 1000;
}

/// How many entries of the fair queue whose states hash is `states_key` are committed on the
/// node: their state begins with 'c' (a hand-off stamp and the client's channel tag may
/// follow; 'p' is pending).
inline long long committed_entries(std::uint16_t port, const std::string& states_key)
{
    std::istringstream in(redis_command(port, {"HVALS", states_key}));
    long long committed = 0;
    for (std::string state; in >> state;) {
        committed += state.front() == 'c' ? 1 : 0;
    }
    return committed;
}

/// How many scripts a node has run, by EVALSHA or EVAL.
inline long scripts_run(std::uint16_t port)
{
    return command_calls(port, "evalsha") + command_calls(port, "eval");
}

/// The message of a coroutine's exception, for a failed check to show; empty for none.
inline std::string what_failed(const std::exception_ptr& e)
{
    if (!e) {
        return {};
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "an exception that is not a std::exception";
    }
}

/// In a coroutine: polls `done` every millisecond until it holds (true) or `limit` passes
/// (false), while the io_context goes on running the client. For what a client finishes after
/// an operation completed: the deletes of a release beyond its quorum (which may need a
/// NOSCRIPT answered first).
inline asio::awaitable<bool> settles(std::function<bool()> done,
                                     std::chrono::milliseconds limit = 5s)
{
    asio::steady_timer tick(co_await asio::this_coro::executor);
    const auto deadline = steady::now() + limit;
    while (!done()) {
        if (steady::now() >= deadline) {
            co_return false;
        }
        tick.expires_after(1ms);
        co_await tick.async_wait(asio::use_awaitable);
    }
    co_return true;
}

/// Five independent masters, started fresh for each test case that uses this fixture.
struct five_nodes
{
    redis_cluster nodes{5};
    asio::io_context io;

    redlock::config config() const { return redlock::config::from_urls(nodes.urls()); }

    /// The value under `key` on node i, read by a separate blocking connection.
    std::optional<std::string> value_on(std::size_t i, const std::string& key)
    {
        return redis_get(nodes[i].port(), key);
    }

    /// On how many nodes `key` holds `value`.
    std::size_t holding(const std::string& key, const std::string& value)
    {
        std::size_t n = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (nodes[i].running() && !nodes[i].paused() && value_on(i, key) == value) {
                ++n;
            }
        }
        return n;
    }
};

/// Acquire as a (error_code, guard) pair instead of throwing.
inline asio::awaitable<std::tuple<boost::system::error_code, redlock::guard>> try_get(
    redlock::mutex m, bool once = false)
{
    if (once) {
        co_return co_await m.async_try_acquire(asio::as_tuple(asio::use_awaitable));
    }
    co_return co_await m.async_acquire(asio::as_tuple(asio::use_awaitable));
}

// A CA and a server certificate for 127.0.0.1, made with the openssl command for one test.
struct test_certificates
{
    std::string dir;
    test_certificates()
    {
        dir =
            std::filesystem::temp_directory_path() / ("redlock-tls-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        const std::string script =
            "cd '" + dir +
            "' && printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
            "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
            "-keyout ca.key -out ca.crt -days 1 -subj /CN=redlock-test-ca && "
            "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
            "-keyout server.key -out server.csr -subj /CN=127.0.0.1 && "
            "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
            "-out server.crt -days 1 -extfile san.ext";
        BOOST_REQUIRE_MESSAGE(std::system((script + " > openssl.log 2>&1").c_str()) == 0,
                              "openssl could not make test certificates in " << dir);
    }
    ~test_certificates() { std::filesystem::remove_all(dir); }
};

/// The arguments of a redis-server that speaks TLS only, on `tls_port`, with `certs`' server
/// certificate, and does not ask clients for theirs.
inline std::vector<std::string> tls_only(const test_certificates& certs, std::uint16_t tls_port)
{
    return {"--tls-port",         std::to_string(tls_port),
            "--tls-cert-file",    certs.dir + "/server.crt",
            "--tls-key-file",     certs.dir + "/server.key",
            "--tls-ca-cert-file", certs.dir + "/ca.crt",
            "--tls-auth-clients", "no"};
}

/// Lets `d` pass on the coroutine's executor (what a test waits out on purpose: a lock's
/// expiry, the time in which something must not happen).
inline asio::awaitable<void> pause_for(std::chrono::milliseconds d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

inline std::chrono::milliseconds since(steady::time_point t)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t);
}

/// Until every node of `nodes` answers `command` with `want`. The servers tell of no such
/// event, so this asks them every few milliseconds (bounded by the test's time limit).
inline asio::awaitable<void> until_nodes_answer(const redis_cluster& nodes,
                                                std::vector<std::string> command,
                                                const std::string& want)
{
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        while (redis_command(nodes[i].port(), command) != want) {
            co_await pause_for(5ms);
        }
    }
}

/// Until `clients` clients have subscribed to `channel` on every node.
inline asio::awaitable<void> until_subscribed(const redis_cluster& nodes,
                                              const std::string& channel, int clients)
{
    // Locals: g++ 12 destroys braced temporaries in a co_await expression twice.
    std::vector<std::string> numsub{"PUBSUB", "NUMSUB", channel};
    const std::string want = channel + " " + std::to_string(clients);
    co_await until_nodes_answer(nodes, std::move(numsub), want);
}

/// What a test coroutine waits for while callbacks change the state it checks: they call
/// notify(), and until(done) re-checks done() after each notification (no polling, no sleep).
class test_event
{
  public:
    explicit test_event(const asio::any_io_executor& ex) : timer_(ex, steady::time_point::max()) {}
    void notify() { timer_.cancel(); }
    template <class Done>
    asio::awaitable<void> until(Done done)
    {
        while (!done()) {
            co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }

  private:
    asio::steady_timer timer_;
};

}  // namespace redlock::test
