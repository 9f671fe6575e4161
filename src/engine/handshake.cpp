// SPDX-License-Identifier: BSL-1.0
#include "engine/handshake.hpp"

#include "core/error_reply.hpp"
#include "engine/exchange.hpp"
#include "net/connect.hpp"
#include "resp/resp.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <exception>
#include <string_view>
#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;
constexpr auto use_tuple = asio::as_tuple(use_awaitable);
// See probe_plain: well above a TLS handshake's round trips on a LAN.
constexpr std::chrono::milliseconds probe_after_max{100};

namespace {

// A TLS handshake with a server that speaks plain Redis gets no answer at all (the server
// waits for the end of an inline command that never comes), so it would end only at the
// connect timeout, like one with a stopped server. Once the handshake has taken `after`, a
// second connection asks the same address for a plain-text PING: a Redis reply proves that
// the port has no TLS. Completes only then (or when cancelled): otherwise the handshake
// decides.
asio::awaitable<node_failure> probe_plain(asio::generic::stream_protocol::endpoint address,
                                          std::chrono::milliseconds after)
{
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer wait(ex, after);
    co_await wait.async_wait(use_awaitable);
    stream probe(ex);
    auto [cec] = co_await probe.socket().async_connect(address, use_tuple);
    if (!cec) {
        std::string ping;
        resp::append_command(ping, {"PING"});
        std::vector<resp::reply> replies;
        const node_failure failure =
            co_await exchange(probe, ping, 1, replies, "the plain-text probe");
        if (!failure &&
            (replies.front().type == resp::kind::simple_string || replies.front().is_error())) {
            co_return node_failure{
                node_errc::tls_mismatch,
                "TLS handshake unanswered, but the port answered a plain-text PING with '" +
                    replies.front().text + "' (" + std::string(tls_to_plain_hint) + ")"};
        }
    }
    // Whatever listens there is not plain Redis: leave the verdict to the handshake.
    wait.expires_at(asio::steady_timer::time_point::max());
    co_await wait.async_wait(use_awaitable);
    co_return node_failure{};
}

node_failure interrupted(std::string why)
{
    return node_failure{node_errc::connection_lost, std::move(why)};
}

// The TLS handshake, raced against probe_plain.
asio::awaitable<node_failure> start_tls(stream& conn, asio::ssl::context& tls,
                                        const std::string& host, bool verify_name,
                                        std::chrono::milliseconds probe_after)
{
    auto ex = co_await asio::this_coro::executor;
    boost::system::error_code ec;
    const auto address = conn.socket().remote_endpoint(ec);
    if (ec) {
        co_return interrupted("TLS handshake interrupted: " + ec.message());
    }
    auto [order, tls_exception, tls_failure, probe_exception, probe_finding] =
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ex, conn.start_tls(tls, host, verify_name), asio::deferred),
            asio::co_spawn(ex, probe_plain(address, probe_after), asio::deferred))
            .async_wait(asio::experimental::wait_for_one(), use_awaitable);
    if (order[0] == 0) {
        if (tls_exception) {
            std::rethrow_exception(tls_exception);
        }
        co_return std::move(tls_failure);
    }
    if (probe_exception || !probe_finding) {
        co_return interrupted("TLS handshake interrupted");
    }
    co_return std::move(probe_finding);
}

// AUTH when a password is set; SELECT when `select_db` and the db is not 0.
asio::awaitable<node_failure> greet(stream& conn, const node& endpoint, bool select_db,
                                    const std::string& name)
{
    std::string hello;
    std::size_t expected = 0;
    if (!endpoint.password.empty()) {
        if (endpoint.username.empty()) {
            resp::append_command(hello, {"AUTH", endpoint.password});
        } else {
            resp::append_command(hello, {"AUTH", endpoint.username, endpoint.password});
        }
        ++expected;
    }
    if (select_db && endpoint.db != 0) {
        resp::append_command(hello, {"SELECT", std::to_string(endpoint.db)});
        ++expected;
    }
    if (expected == 0) {
        co_return node_failure{};
    }
    std::vector<resp::reply> replies;
    if (node_failure failure = co_await exchange(conn, hello, expected, replies, name)) {
        if (failure.code != node_errc::protocol_error) {
            failure.detail.insert(0, "handshake with " + name + " failed: ");
        }
        co_return failure;
    }
    const char* steps[] = {endpoint.password.empty() ? "SELECT" : "AUTH", "SELECT"};
    for (std::size_t i = 0; i < expected; ++i) {
        if (replies[i].is_error()) {
            // The reply text comes from the server and never contains the password.
            co_return node_failure{
                classify_error_reply(replies[i].text),
                std::string(steps[i]) + " on " + name + " failed: " + with_hint(replies[i].text)};
        }
    }
    co_return node_failure{};
}

node_failure connect_failed(std::string why)
{
    return node_failure{node_errc::connect_failed, std::move(why)};
}

}  // namespace

asio::awaitable<node_failure> connect_and_greet(stream& conn, const node& endpoint, bool select_db,
                                                asio::ssl::context* tls, bool verify_name,
                                                std::chrono::milliseconds timeout)
{
    const std::string name = endpoint.endpoint();
    if (node_failure failure = co_await connect_socket(conn, endpoint)) {
        co_return failure;
    }
    if (endpoint.tls) {
        if (tls == nullptr) {
            co_return node_failure{node_errc::tls_failed, "TLS requested for " + name +
                                                              " but the client has no TLS context"};
        }
        node_failure failure = co_await start_tls(conn, *tls, endpoint.host, verify_name,
                                                  std::min(probe_after_max, timeout / 4));
        if (failure) {
            failure.detail += " (" + name + ")";
            co_return failure;
        }
    }
    co_return co_await greet(conn, endpoint, select_db, name);
}

asio::awaitable<node_failure> within_deadline(asio::awaitable<node_failure> op,
                                              std::chrono::milliseconds timeout, std::string what)
{
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer deadline(ex, timeout);
    try {
        auto [order, exception, failure, timer_ec] =
            co_await asio::experimental::make_parallel_group(
                asio::co_spawn(ex, std::move(op), asio::deferred),
                deadline.async_wait(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), use_awaitable);
        (void)timer_ec;
        if (order[0] == 1) {
            co_return node_failure{
                node_errc::connect_timed_out,
                what + " timed out after " + std::to_string(timeout.count()) + " ms"};
        }
        if (exception) {
            co_return connect_failed(what + " failed: internal error");
        }
        co_return std::move(failure);
    } catch (const std::exception& e) {
        co_return connect_failed(what + " failed: " + e.what());
    }
}

asio::awaitable<node_failure> open_stream(stream& s, const node& endpoint,
                                          std::chrono::milliseconds timeout, bool select_db,
                                          asio::ssl::context* tls, bool verify_name)
{
    return within_deadline(connect_and_greet(s, endpoint, select_db, tls, verify_name, timeout),
                           timeout, "connect to " + endpoint.endpoint());
}

}  // namespace redlock::detail
