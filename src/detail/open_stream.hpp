#pragma once

// Opening a stream to a node: resolve, connect, AUTH and SELECT, under one deadline. Shared
// by the request connection and the subscriber.

#include <redlock/node.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <chrono>
#include <string>

namespace redlock::detail {

/// Connects `s` to `endpoint` and runs the handshake (AUTH when a password is set; SELECT
/// when `select_db` and the db is not 0), all within `timeout`. Returns an error message
/// naming the node and the cause (never the password), empty on success.
boost::asio::awaitable<std::string> open_stream(boost::asio::generic::stream_protocol::socket& s,
                                                const node& endpoint,
                                                std::chrono::milliseconds timeout, bool select_db);

}  // namespace redlock::detail
