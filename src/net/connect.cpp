// SPDX-License-Identifier: BSL-1.0
#include "net/connect.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>

namespace redlock::detail {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

node_failure connect_failed(std::string why)
{
    return node_failure{node_errc::connect_failed, std::move(why)};
}

}  // namespace

asio::awaitable<node_failure> connect_socket(stream& conn, const node& endpoint)
{
    stream::socket_type& s = conn.socket();
    if (!endpoint.unix_path.empty()) {
        asio::local::stream_protocol::endpoint ep(endpoint.unix_path);
        auto [ec] =
            co_await s.async_connect(asio::generic::stream_protocol::endpoint(ep), use_tuple);
        co_return ec
            ? connect_failed("connect to " + endpoint.endpoint() + " failed: " + ec.message())
            : node_failure{};
    }
    asio::ip::tcp::resolver resolver(s.get_executor());
    auto [rec, results] =
        co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), use_tuple);
    if (rec) {
        co_return connect_failed("cannot resolve host '" + endpoint.host + "': " + rec.message());
    }
    boost::system::error_code last = asio::error::host_not_found;
    for (const auto& entry : results) {
        if (s.is_open()) {
            s.close();
        }
        auto [ec] = co_await s.async_connect(
            asio::generic::stream_protocol::endpoint(entry.endpoint()), use_tuple);
        last = ec;
        if (!ec) {
            break;
        }
    }
    if (last) {
        co_return connect_failed("connect to " + endpoint.endpoint() +
                                 " failed: " + last.message());
    }
    // Requests are small and latency-bound; Nagle would hold them back.
    boost::system::error_code ignored;
    s.set_option(asio::ip::tcp::no_delay(true), ignored);
    co_return node_failure{};
}

}  // namespace redlock::detail
