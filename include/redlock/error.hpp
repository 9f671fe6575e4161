// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// The outcomes of lock operations as a `boost::system` error category.

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace redlock {

/// Outcomes of lock operations. Node-level causes (refused connections, per-node deadlines,
/// protocol errors, Redis error replies) are not flattened into these: they are kept per
/// node in a `redlock::report`, as a `node_errc` (`node_outcome::code`) and a detail text.
enum class error {
    /// Another owner holds the lock on a quorum of nodes.
    taken = 1,
    /// No quorum after all tries: nodes unreachable, slow, or the lock stayed contended.
    failed,
    /// Fewer than a quorum of nodes still held our value when releasing.
    not_held,
    /// Extending did not reach a quorum within the lock's validity.
    extend_failed,
    /// The lock's validity ran out before the operation could be done.
    expired,
    /// Bad configuration or options; the exception or report message names the field.
    invalid_argument,
    /// The client was shut down; no further operations are accepted.
    shut_down,
    /// The lock was lost while held: an extension found it gone from a majority of nodes,
    /// or its validity ran out without a confirmed extension.
    lost,
    /// A fenced resource refused a request: it has already seen a newer fencing token (or
    /// the same token from another owner). The lock behind the request is no longer ours.
    stale_token,
    /// No quorum is possible because of nodes whose errors retrying cannot fix: a wrong or
    /// missing password, a replica or a cluster node listed as a master, TLS on one side
    /// only. `acquire` stops at once; the per-node report names each such node.
    misconfigured,
};

/// The category of `redlock::error`; its name is "redlock".
const boost::system::error_category& error_category() noexcept;

/// Makes `error_code`s from `redlock::error` (found by argument-dependent lookup).
inline boost::system::error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

}  // namespace redlock

namespace boost::system {
template <>
struct is_error_code_enum<::redlock::error> : std::true_type
{
};
}  // namespace boost::system
