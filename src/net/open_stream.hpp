// SPDX-License-Identifier: BSL-1.0
#pragma once

// Opening a stream to a node: resolve, connect, AUTH and SELECT, under one deadline. Shared
// by the request connection and the subscriber.

#include <redlock/node.hpp>

#include "core/node_error.hpp"
#include "net/stream.hpp"
#include "resp/resp.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <string>
#include <vector>

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

/// Writes `commands` and reads `count` replies into `replies`. Returns what failed: the
/// write or the read (`connection_lost`), or the protocol (`protocol_error`, naming `name`);
/// no failure on success. No deadline of its own.
boost::asio::awaitable<node_failure> exchange(stream& s, const std::string& commands,
                                              std::size_t count, std::vector<resp::reply>& replies,
                                              const std::string& name);

/// Runs `op`, a step of opening a connection, until `timeout`; then answers
/// `connect_timed_out`, "`what` timed out after N ms".
boost::asio::awaitable<node_failure> within_deadline(boost::asio::awaitable<node_failure> op,
                                                     std::chrono::milliseconds timeout,
                                                     std::string what);

}  // namespace redlock::detail
