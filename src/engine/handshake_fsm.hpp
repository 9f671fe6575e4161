// SPDX-License-Identifier: BSL-1.0
#pragma once

// The decisions of opening a socket up to where requests may go on it, without I/O: connect,
// TLS for a rediss:// node (and how long before a plain-text PING checks whether the port
// has TLS at all), then the greeting (AUTH when a password is set, SELECT when the db is not
// 0), and how each reply is judged. `connect_and_greet` (handshake.cpp) does what it says and
// tells it what came of it. Unit-tested in tests/unit/test_handshake_fsm.cpp.

#include <redlock/node.hpp>

#include "core/node_error.hpp"
#include "resp/resp.hpp"

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

namespace redlock::detail {

class handshake_fsm
{
  public:
    enum class step {
        /// Connect the socket (net/connect.hpp); then `connected`.
        connect,
        /// Run the TLS handshake, and once it has taken `action::probe_after` ask the same
        /// address for a plain-text PING on a second socket; then `tls_done`, and for the
        /// PING's reply `plain_ping_answered`.
        start_tls,
        /// Write `action::payload` and read `action::replies` replies; then `greeted`.
        greet,
        /// Done, with `action::failure` (none on success).
        complete,
    };

    struct action
    {
        step what = step::complete;
        /// For `complete`.
        node_failure failure{};
        /// For `start_tls`.
        std::chrono::milliseconds probe_after{};
        /// For `greet`.
        std::string payload{};
        std::size_t replies = 0;
    };

    /// `select_db`: SELECT the node's db (not for a Sentinel); `has_tls_context`: the client
    /// has a TLS context for a rediss:// node; `timeout`: the deadline of the whole opening,
    /// which scales the wait before the plain-text PING.
    handshake_fsm(const node& endpoint, bool select_db, bool has_tls_context,
                  std::chrono::milliseconds timeout);

    action start() const { return action{.what = step::connect}; }
    /// The socket's connect completed.
    action connected(node_failure failure) const;
    /// The TLS handshake completed (or the plain-text PING found the port without TLS).
    action tls_done(node_failure failure) const;
    /// The greeting's exchange completed: `replies` holds its replies when it did not fail.
    action greeted(node_failure failure, std::span<const resp::reply> replies) const;

    /// What a reply to the plain-text PING sent while the TLS handshake hangs means: a Redis
    /// reply proves the port has no TLS (`tls_mismatch`); anything else leaves the verdict to
    /// the TLS handshake (no failure).
    static node_failure plain_ping_answered(const resp::reply& reply);

    /// The node as reports name it.
    const std::string& name() const noexcept { return name_; }

  private:
    action greet_or_complete() const;
    static action complete(node_failure failure);

    const node& endpoint_;
    std::string name_;
    bool select_db_;
    bool has_tls_context_;
    std::chrono::milliseconds probe_after_;
};

}  // namespace redlock::detail
