// SPDX-License-Identifier: BSL-1.0
#include "engine/handshake.hpp"

#include "engine/exchange.hpp"
#include "engine/handshake_fsm.hpp"
#include "net/connect.hpp"
#include "resp/resp.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;
constexpr auto use_tuple = asio::as_tuple(use_awaitable);

namespace {

// Once the TLS handshake has taken `after`, a second connection asks the same address for a
// plain-text PING (see handshake_fsm::plain_ping_answered). Completes only when the reply
// proves the port has no TLS (or when cancelled): otherwise the handshake decides.
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
        if (!failure) {
            if (node_failure finding = handshake_fsm::plain_ping_answered(replies.front())) {
                co_return finding;
            }
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

node_failure connect_failed(std::string why)
{
    return node_failure{node_errc::connect_failed, std::move(why)};
}

}  // namespace

asio::awaitable<node_failure> connect_and_greet(stream& conn, const node& endpoint, bool select_db,
                                                asio::ssl::context* tls, bool verify_name,
                                                std::chrono::milliseconds timeout)
{
    const handshake_fsm fsm(endpoint, select_db, tls != nullptr, timeout);
    for (handshake_fsm::action a = fsm.start();;) {
        switch (a.what) {
            case handshake_fsm::step::connect:
                a = fsm.connected(co_await connect_socket(conn, endpoint));
                break;
            case handshake_fsm::step::start_tls:
                a = fsm.tls_done(
                    co_await start_tls(conn, *tls, endpoint.host, verify_name, a.probe_after));
                break;
            case handshake_fsm::step::greet: {
                std::vector<resp::reply> replies;
                node_failure failure =
                    co_await exchange(conn, a.payload, a.replies, replies, fsm.name());
                a = fsm.greeted(std::move(failure), replies);
                break;
            }
            case handshake_fsm::step::complete:
                co_return std::move(a.failure);
        }
    }
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
