// SPDX-License-Identifier: BSL-1.0
// The runner under an exchange, over one end of a socket pair whose other end the test
// writes and reads: the replies come back in order, the socket is handed back for its link,
// and a failure or a deadline ends the exchange with nothing left running.
#include "engine/exchange.hpp"
#include "engine/handshake.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

using namespace redlock::detail;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

struct socket_pair
{
    socket_pair()
    {
        asio::local::stream_protocol::socket near(io);
        asio::local::connect_pair(near, far);
        client.socket().assign(asio::generic::stream_protocol(AF_UNIX, SOCK_STREAM),
                               near.release());
    }

    // Runs `op` to its end, and everything it left behind.
    node_failure run(asio::awaitable<node_failure> op)
    {
        auto result = asio::co_spawn(io, std::move(op), asio::use_future);
        io.run();
        io.restart();
        return result.get();
    }

    // What the client wrote so far.
    std::string written()
    {
        std::string out(1024, '\0');
        out.resize(far.read_some(asio::buffer(out)));
        return out;
    }

    asio::io_context io;
    stream client{io.get_executor()};
    asio::local::stream_protocol::socket far{io};
    std::vector<resp::reply> replies;
};

std::string two_commands()
{
    std::string out;
    resp::append_command(out, {"AUTH", "secret"});
    resp::append_command(out, {"SELECT", "2"});
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(exchanges)

BOOST_AUTO_TEST_CASE(replies_come_back_in_order_and_the_socket_is_handed_back)
{
    socket_pair p;
    asio::write(p.far, asio::buffer(std::string("+OK\r\n-ERR no such db\r\n")));
    BOOST_TEST(!p.run(exchange(p.client, two_commands(), 2, p.replies, "n")));
    BOOST_TEST_REQUIRE(p.replies.size() == 2u);
    BOOST_TEST(p.replies[0].text == "OK");
    BOOST_TEST(p.replies[1].is_error());
    BOOST_TEST(p.written() == two_commands());
    // The socket goes on, for its link.
    asio::write(p.far, asio::buffer(std::string("+PONG\r\n")));
    std::string ping;
    resp::append_command(ping, {"PING"});
    BOOST_TEST(!p.run(exchange(p.client, ping, 1, p.replies, "n")));
    BOOST_TEST(p.replies.at(0).text == "PONG");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_no_reply_are_a_protocol_error_naming_the_server)
{
    socket_pair p;
    asio::write(p.far, asio::buffer(std::string("\x13\x37garbage\r\n")));
    const node_failure failure = p.run(exchange(p.client, two_commands(), 2, p.replies, "n:1"));
    BOOST_TEST((failure.code == redlock::node_errc::protocol_error));
    BOOST_TEST(failure.detail.starts_with("protocol error from n:1: "), failure.detail);
}

BOOST_AUTO_TEST_CASE(a_server_that_closes_ends_the_exchange)
{
    socket_pair p;
    asio::write(p.far, asio::buffer(std::string("+OK\r\n")));
    p.far.close();
    const node_failure failure = p.run(exchange(p.client, two_commands(), 2, p.replies, "n"));
    BOOST_TEST((failure.code == redlock::node_errc::connection_lost), failure.detail);
}

BOOST_AUTO_TEST_CASE(a_deadline_ends_an_unanswered_exchange_and_leaves_nothing_running)
{
    socket_pair p;
    const auto start = std::chrono::steady_clock::now();
    // run() returns only once no handler is left: the read under way was ended too.
    const node_failure failure =
        p.run(within_deadline(exchange(p.client, two_commands(), 2, p.replies, "n"), 50ms, "AUTH"));
    BOOST_TEST((failure.code == redlock::node_errc::connect_timed_out));
    BOOST_TEST(failure.detail == "AUTH timed out after 50 ms");
    BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
}

BOOST_AUTO_TEST_SUITE_END()
