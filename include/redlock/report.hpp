// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// What happened on each node during one lock operation.

#include <redlock/node_error.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// The outcome of one operation on one node.
enum class node_status {
    /// The node did what was asked (set, extended, released, or holds our value).
    ok,
    /// The key holds another owner's value.
    taken,
    /// The key does not exist (expired, released, or lost in a restart).
    missing,
    /// No reply before the per-node deadline.
    timed_out,
    /// Connection failure, protocol error, or a Redis error reply: see `code` and `detail`.
    error,
    /// The operation ended before this node answered (decided early, or cancelled).
    abandoned,
};

/// "ok", "taken", "missing", "timed out", "error", "abandoned".
std::string_view to_string(node_status s) noexcept;

/// One node's part of an operation.
struct node_outcome
{
    /// The node, as `node::endpoint()` names it.
    std::string endpoint;
    /// What the node did.
    node_status status = node_status::abandoned;
    /// For `error`, `timed_out` and `abandoned`: what happened and what to check, for people
    /// (the node's name, the server's own words). Otherwise empty.
    std::string detail;
    /// From sending the request to its outcome.
    std::chrono::microseconds latency{0};
    /// For a fenced acquisition (`options::fencing`) that this node granted: the node's
    /// fencing counter for the lock after this acquisition; the guard's token is the
    /// largest of the quorum. 0 otherwise.
    std::uint64_t fencing_token = 0;
    /// For `error`, `timed_out` and `abandoned`: the cause, a `redlock::node_errc`, for code
    /// to decide on (`o.code == redlock::node_errc::authentication`), where `detail` is for
    /// people. Otherwise empty.
    boost::system::error_code code{};
};

/// The per-node outcomes of the last attempt of an operation, in the config's node order.
struct report
{
    /// One outcome per node, in the config's order.
    std::vector<node_outcome> nodes;
    /// Attempts made (acquire may make several).
    int attempts = 0;

    /// How many nodes had `status`.
    std::size_t count(node_status status) const noexcept;
    /// One line per node, e.g. "127.0.0.1:7001 timed out (no reply within 50 ms)".
    std::string to_string() const;
};

}  // namespace redlock
