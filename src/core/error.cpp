// SPDX-License-Identifier: BSL-1.0
#include <redlock/error.hpp>

#include "core/message_table.hpp"

#include <array>
#include <cstddef>
#include <string_view>

namespace redlock {
namespace {

// The message of error v stands at v - 1.
constexpr std::array<std::string_view, 10> messages{
    // taken
    "lock taken: another owner holds it on a quorum of nodes",
    // failed
    "lock failed: no quorum of nodes granted it in the tries allowed (check the per-node "
    "report for unreachable or slow nodes)",
    // not_held: one value for two causes (see guard.hpp); the message names both, the owned
    // state first, which the caller can check with guard::owns_lock().
    "lock not held: the guard owns no lock (released already, or never acquired), or fewer "
    "than a quorum of nodes still had its value (it expired or was taken over)",
    // extend_failed
    "extend failed: no quorum of nodes extended the lock within its validity",
    // expired
    "lock expired: its validity ran out before the operation",
    // invalid_argument
    "invalid argument: check the client configuration and lock options",
    // shut_down
    "client shut down: no further lock operations are accepted",
    // lost
    "lock lost while held: it is gone from a majority of nodes or its validity ran out "
    "unconfirmed (the protected work must stop)",
    // stale_token
    "stale fencing token: the fenced resource has seen a newer token, so the lock behind "
    "this request has passed to another owner",
    // misconfigured
    "nodes misconfigured: too many nodes fail in a way retrying cannot fix (password, "
    "replica, cluster mode or TLS) for a quorum; check the per-node report",
};
static_assert(static_cast<std::size_t>(error::misconfigured) == messages.size());

}  // namespace

const boost::system::error_category& error_category() noexcept
{
    return detail::category_of<messages>("redlock");
}

}  // namespace redlock
