// SPDX-License-Identifier: BSL-1.0
#pragma once

// Opening the byte stream to a server: resolve its name and connect (TCP, or a unix domain
// socket), before TLS (stream::start_tls) and the handshake (engine/handshake.hpp).

#include <redlock/node.hpp>

#include "core/node_error.hpp"
#include "net/stream.hpp"

#include <boost/asio/awaitable.hpp>

namespace redlock::detail {

/// Connects `s`'s socket to `endpoint` (a server: host and port, tried address by address,
/// or a unix socket path). Returns what failed (`connect_failed`, naming the node); no
/// failure on success. No deadline of its own.
boost::asio::awaitable<node_failure> connect_socket(stream& s, const node& endpoint);

}  // namespace redlock::detail
