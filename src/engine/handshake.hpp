// SPDX-License-Identifier: BSL-1.0
#pragma once

// Opening a socket to a server up to where requests may go on it: connect (net/connect.hpp),
// TLS for a rediss:// node, then the handshake (AUTH, SELECT), under one deadline. Shared by
// every user of a socket: the pipelined link, the subscriber, the Sentinel watch and the
// questions asked of Sentinels.

#include <redlock/node.hpp>

#include "core/node_error.hpp"
#include "net/stream.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <string>

namespace redlock::detail {

/// Connects `s` to `endpoint` (a server: host and port, or a unix socket), runs TLS for a
/// `rediss://` node (with `tls`), then the handshake (AUTH when a password is set; SELECT
/// when `select_db` and the db is not 0), all within `timeout`. Returns what failed, its
/// detail naming the node and the cause (never the password); no failure on success.
boost::asio::awaitable<node_failure> open_stream(stream& s, const node& endpoint,
                                                 std::chrono::milliseconds timeout, bool select_db,
                                                 boost::asio::ssl::context* tls, bool verify_name);

/// `open_stream` without its deadline, for callers that bound several steps at once;
/// `timeout` only scales the check for a TLS URL on a plain port.
boost::asio::awaitable<node_failure> connect_and_greet(stream& s, const node& endpoint,
                                                       bool select_db,
                                                       boost::asio::ssl::context* tls,
                                                       bool verify_name,
                                                       std::chrono::milliseconds timeout);

/// Runs `op`, a step of opening a connection, until `timeout`; then answers
/// `connect_timed_out`, "`what` timed out after N ms".
boost::asio::awaitable<node_failure> within_deadline(boost::asio::awaitable<node_failure> op,
                                                     std::chrono::milliseconds timeout,
                                                     std::string what);

}  // namespace redlock::detail
