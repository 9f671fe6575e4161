// SPDX-License-Identifier: BSL-1.0
#pragma once

// One connect attempt of a link, without I/O: open a socket (the handshake, and for a
// Sentinel node the master lookup), have a stuck server answer a PING on it first, then
// attach it to the runner; or drop it when the link moved on meanwhile; and what a socket's
// failure means. `connection::connect` (connection.cpp) does what it says and tells it what
// came of it. The link's life (when to connect, the back-off) is `connection_fsm`'s.
// Unit-tested in tests/unit/test_probe_fsm.cpp.

#include <redlock/node_error.hpp>

#include "core/node_error.hpp"
#include "engine/connection_fsm.hpp"
#include "engine/runner.hpp"

#include <boost/asio/error.hpp>

#include <cstdint>
#include <utility>

namespace redlock::detail {

class probe_fsm
{
  public:
    enum class step {
        /// Open a socket to where the link's requests go; then `opened`.
        open,
        /// Write a PING on the fresh socket and wait for its answer, within the connect
        /// timeout; then `pinged`.
        ping,
        /// The socket is ready: `connection_fsm::connected`, and the runner takes it.
        attach,
        /// The attempt failed with `action::failure`: `connection_fsm::failed`.
        fail,
        /// The link was closed, or the attempt superseded, meanwhile: the socket is dropped
        /// and nothing else changes.
        drop,
    };

    struct action
    {
        step what = step::open;
        node_failure failure{};
    };

    /// An attempt the link started at `generation` (`connection_fsm::generation()`).
    explicit probe_fsm(std::uint64_t generation) noexcept : generation_(generation) {}

    action start() const { return action{step::open}; }

    /// The socket's opening completed. A fresh socket to a server given up as stuck must
    /// have it answer first: a stopped server (SIGSTOP, a frozen VM) still accepts
    /// connections, its kernel completes them.
    action opened(node_failure failure, const connection_fsm& link) const
    {
        if (!link.accepts(generation_)) {
            return action{step::drop};
        }
        if (failure) {
            return action{step::fail, std::move(failure)};
        }
        return action{link.probing() ? step::ping : step::attach};
    }

    /// The PING's exchange completed: any reply is an answer.
    action pinged(node_failure failure, const connection_fsm& link) const
    {
        if (!link.accepts(generation_)) {
            return action{step::drop};
        }
        if (failure) {
            return action{step::fail, std::move(failure)};
        }
        return action{step::attach};
    }

    /// The code of an attached socket's failure. A TLS port resets a connection whose first
    /// bytes are not a TLS handshake: a reset before any reply on a plain connection is
    /// `tls_mismatch` (a misconfiguration); a reset after replies is a dropped connection,
    /// which may pass.
    static node_errc failure_code(const socket_failure& failure, bool heard_from_server,
                                  bool tls) noexcept
    {
        if (failure.where == socket_failure::stage::matching) {
            return node_errc::protocol_error;
        }
        if (failure.error == boost::asio::error::connection_reset && !heard_from_server && !tls) {
            return node_errc::tls_mismatch;
        }
        return node_errc::connection_lost;
    }

  private:
    std::uint64_t generation_;
};

}  // namespace redlock::detail
