// SPDX-License-Identifier: BSL-1.0
#pragma once

// A few commands on a socket of their own, awaited: the handshake of a fresh socket (AUTH,
// SELECT, a PING), a Sentinel's answer, a master's ROLE. A short-lived multiplexer and its
// runner (runner.hpp) carry them; once answered, the socket is handed back, for its link.

#include "core/node_error.hpp"
#include "net/stream.hpp"
#include "resp/resp.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace redlock::detail {

/// Writes `commands` (at most 255) and reads `count` replies into `replies`, on `s`, which
/// it hands back once answered. Returns what failed: the write or the read
/// (`connection_lost`), or the protocol (`protocol_error`, naming `name`); no failure on
/// success. No deadline of its own: the awaiting coroutine's cancellation ends it (the socket
/// is then closed).
boost::asio::awaitable<node_failure> exchange(stream& s, const std::string& commands,
                                              std::size_t count, std::vector<resp::reply>& replies,
                                              const std::string& name);

}  // namespace redlock::detail
