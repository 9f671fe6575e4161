// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Why one node did not give the reply a lock operation asked for: the codes of
/// `node_outcome::code`, a `boost::system` error category of their own.

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace redlock {

/// The cause of a node's outcome when it is not a reply about the lock (`timed_out`, `error`
/// or `abandoned`), in the "redlock.node" category. `node_outcome::detail` says the same for
/// people, with the node's name and the server's own words. The codes that retrying cannot fix
/// (see `error::misconfigured`) are `tls_failed`, `tls_mismatch`, `authentication`,
/// `no_permission`, `not_a_master`, `wrong_mode`, `redirected` and `bad_database`.
enum class node_errc {
    /// No reply before the per-node deadline.
    timed_out = 1,
    /// Connecting (with TLS, AUTH and SELECT, or finding a Sentinel node's master) took longer
    /// than `config::connect_timeout`.
    connect_timed_out,
    /// The host name did not resolve, or the connection was refused or unreachable.
    connect_failed,
    /// The connection broke: a read or a write failed, the server closed it, or a TLS
    /// handshake was broken off.
    connection_lost,
    /// The TLS handshake was refused: a certificate that cannot be trusted, a host name it
    /// does not carry, no common protocol version.
    tls_failed,
    /// TLS on one side only: a `rediss://` URL for a plain port, or a `redis://` URL for a
    /// TLS port.
    tls_mismatch,
    /// The server refused the credentials (WRONGPASS), wants some (NOAUTH), or has no
    /// password for the one the URL gives.
    authentication,
    /// The user's ACL does not allow the lock's commands or keys (NOPERM).
    no_permission,
    /// The node is a replica (READONLY): locks belong on masters.
    not_a_master,
    /// A Redis Cluster server on a `redis://` URL (CROSSSLOT, SELECT refused in cluster
    /// mode), or a standalone server on a `redis-cluster://` URL.
    wrong_mode,
    /// The server redirected the request (MOVED, ASK): a Redis Cluster server on a
    /// `redis://` URL. A `redis-cluster://` node follows redirections itself.
    redirected,
    /// The server has fewer databases than the URL's db number.
    bad_database,
    /// The cluster cannot serve the key's slot now: CLUSTERDOWN, a slot without a master,
    /// masters that disagree about it, or no server that tells the slot map.
    cluster_down,
    /// Any other error reply (LOADING, BUSY, OOM, MISCONF, MASTERDOWN, ...).
    server_error,
    /// The server sent bytes that are not a Redis reply, or a reply nobody asked for.
    protocol_error,
    /// A well-formed reply, but not one the command can answer.
    unexpected_reply,
    /// The key was set, but fewer replicas acknowledged it than `options::wait_for_replicas`
    /// asks.
    not_replicated,
    /// The Sentinels moved a Sentinel node's master elsewhere (a failover); the next request
    /// goes to the new one.
    master_switched,
    /// No Sentinel of a Sentinel node named its master.
    no_master,
    /// The client closed the connection (`client::async_shutdown`).
    closed,
    /// Not awaited: the operation was cancelled.
    cancelled,
    /// Not awaited: the outcome was decided by a quorum of the other nodes.
    decided_by_quorum,
    /// Not awaited: a quorum was no longer possible.
    quorum_impossible,
    /// Still pending when the outcome was decided: the request goes on in the background.
    in_background,
};

/// The category of `node_errc`; its name is "redlock.node".
const boost::system::error_category& node_error_category() noexcept;

/// Makes `error_code`s from `node_errc` (found by argument-dependent lookup).
inline boost::system::error_code make_error_code(node_errc e) noexcept
{
    return {static_cast<int>(e), node_error_category()};
}

}  // namespace redlock

namespace boost::system {
template <>
struct is_error_code_enum<::redlock::node_errc> : std::true_type
{
};
}  // namespace boost::system
