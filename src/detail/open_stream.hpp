// SPDX-License-Identifier: BSL-1.0
#pragma once

// Opening a stream to a node: resolve, connect, AUTH and SELECT, under one deadline. Shared
// by the request connection and the subscriber.

#include <redlock/node.hpp>

#include "detail/stream.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <string>

namespace redlock::detail {

/// Connects `s` to `endpoint`, runs TLS for a `rediss://` node (with `tls`), then the
/// handshake (AUTH when a password is set; SELECT when `select_db` and the db is not 0), all
/// within `timeout`. Returns an error message naming the node and the cause (never the
/// password), empty on success.
boost::asio::awaitable<std::string> open_stream(stream& s, const node& endpoint,
                                                std::chrono::milliseconds timeout, bool select_db,
                                                boost::asio::ssl::context* tls, bool verify_name);

}  // namespace redlock::detail
