// SPDX-License-Identifier: BSL-1.0
#include "net/connect.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

asio::awaitable<std::string> connect_socket(stream& conn, const node& endpoint)
{
    stream::socket_type& s = conn.socket();
    const std::string name = endpoint.endpoint();
    if (!endpoint.unix_path.empty()) {
        asio::local::stream_protocol::endpoint ep(endpoint.unix_path);
        auto [ec] =
            co_await s.async_connect(asio::generic::stream_protocol::endpoint(ep), use_tuple);
        co_return ec ? "connect to " + name + " failed: " + ec.message() : std::string();
    }
    asio::ip::tcp::resolver resolver(s.get_executor());
    auto [rec, results] =
        co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), use_tuple);
    if (rec) {
        co_return "cannot resolve host '" + endpoint.host + "': " + rec.message();
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
        co_return "connect to " + name + " failed: " + last.message();
    }
    // Requests are small and latency-bound; Nagle would hold them back.
    boost::system::error_code ignored;
    s.set_option(asio::ip::tcp::no_delay(true), ignored);
    co_return std::string();
}

}  // namespace redlock::detail
