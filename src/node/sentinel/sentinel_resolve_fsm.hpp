// SPDX-License-Identifier: BSL-1.0
#pragma once

// Finding the master of a Sentinel node, without I/O: the Sentinels are asked in their order
// (`SENTINEL get-master-addr-by-name`), each within a share of the connect timeout so that a
// stopped one leaves time for the others; the first that names a master wins; the socket
// then goes to that master, whose ROLE must say "master" (right after a failover a Sentinel
// may still name the old master, which is becoming a replica). `open_node` (sentinel.cpp)
// does what it says and tells it what came of it. Unit-tested in
// tests/unit/test_sentinel_resolve_fsm.cpp.

#include <redlock/node.hpp>

#include "core/node_error.hpp"
#include "resp/resp.hpp"

#include <chrono>
#include <cstddef>
#include <string>

namespace redlock::detail {

class sentinel_resolve_fsm
{
  public:
    enum class step {
        /// Open a socket to `action::server` (a Sentinel; no SELECT), write
        /// `action::payload` and read one reply, all within `action::timeout`; then
        /// `sentinel_answered`.
        ask_sentinel,
        /// Open the link's socket to `action::server` (the master named); then
        /// `master_connected`.
        connect_master,
        /// Write `action::payload` (ROLE) on that socket and read one reply; then
        /// `role_answered`.
        ask_role,
        /// Done, with `action::failure` (none: the socket is at the master).
        complete,
    };

    struct action
    {
        step what = step::complete;
        node server{};
        std::string payload{};
        std::chrono::milliseconds timeout{};
        node_failure failure{};
    };

    /// `n`: a Sentinel node (at least one Sentinel); `timeout`: the deadline of the whole
    /// lookup and connect.
    sentinel_resolve_fsm(const node& n, std::chrono::milliseconds timeout);

    /// Asks the first Sentinel.
    action start();
    /// The Sentinel asked last answered `reply`, or `failure` (it could not be reached, it
    /// refused the handshake, it timed out): the master it names, or the next Sentinel, or,
    /// after the last, `no_master` unless all failed alike (every one refused the password).
    action sentinel_answered(node_failure failure, const resp::reply& reply);
    /// The socket to the master named opened (the handshake included), or `failure`.
    action master_connected(node_failure failure);
    /// ROLE's `reply`, or `failure`. An ACL that forbids ROLE leaves the Sentinels' word
    /// standing; any role but "master" is `master_switched` (a failover in progress).
    action role_answered(node_failure failure, const resp::reply& reply) const;

    /// The master named ("host:port"), once named.
    const std::string& reached() const noexcept { return reached_; }

  private:
    action ask(std::size_t sentinel) const;

    const node& node_;
    std::chrono::milliseconds timeout_;
    std::chrono::milliseconds share_;
    std::size_t asked_ = 0;
    failure_list failures_;
    std::string reached_;
};

}  // namespace redlock::detail
