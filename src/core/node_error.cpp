// SPDX-License-Identifier: BSL-1.0
#include "core/node_error.hpp"

#include "core/message_table.hpp"

#include <array>
#include <cstddef>
#include <string_view>

namespace redlock {
namespace {

// The messages of the codes whose detail is their message alone (timed_out and the reasons a
// node was not awaited) are what reports show for them. The text of code v stands at v - 1.
constexpr std::array<std::string_view, 25> messages{
    // Deadlines and the connection.
    // timed_out
    "no reply before the per-node deadline",
    // connect_timed_out
    "connecting (TLS, AUTH, SELECT, finding a Sentinel node's master) took longer than "
    "connect_timeout",
    // connect_failed
    "cannot connect: the host name did not resolve, or the connection was refused",
    // connection_lost
    "the connection broke: a read or a write failed, or the server closed it",
    // Misconfigurations: the next attempt meets them again.
    // tls_failed
    "TLS handshake refused: check the CA file, the server's certificate and the node's host name",
    // tls_mismatch
    "TLS on one side only: a TLS URL (rediss://) for a plain port, or a plain URL (redis://) for "
    "a TLS port",
    // authentication
    "authentication refused: check the URL's credentials against the server's",
    // no_permission
    "the user's ACL does not allow the lock's commands or keys",
    // not_a_master
    "the node is a replica: list masters",
    // wrong_mode
    "cluster mode mismatch: list a Redis Cluster as redis-cluster://, a standalone server as "
    "redis://",
    // redirected
    "the server redirected the request (MOVED, ASK): list a Redis Cluster as redis-cluster://",
    // bad_database
    "the server has fewer databases than the URL's db number",
    // What the server answered.
    // cluster_down
    "the cluster cannot serve the key's slot now",
    // server_error
    "the server answered with an error",
    // protocol_error
    "protocol error: the server sent what is not a Redis reply, or a reply nobody asked for",
    // unexpected_reply
    "a reply that the command cannot have",
    // not_replicated
    "fewer replicas acknowledged the write than options::wait_for_replicas asks",
    // Sentinel nodes.
    // master_switched
    "the Sentinels switched the node's master (a failover)",
    // no_master
    "no Sentinel named the node's master",
    // The client stopped waiting.
    // closed
    "the client closed the connection",
    // cancelled
    "not awaited: the operation was cancelled",
    // decided_by_quorum
    "not awaited: the outcome was decided by a quorum of the other nodes",
    // quorum_impossible
    "not awaited: a quorum was no longer possible",
    // in_background
    "still pending when the outcome was decided: the request goes on in the background",
    // The caller's mistake.
    // permits_mismatch
    "the semaphore's holders on the node use another number of permits than this client",
};
static_assert(static_cast<std::size_t>(node_errc::permits_mismatch) == messages.size());

}  // namespace

const boost::system::error_category& node_error_category() noexcept
{
    return detail::category_of<messages>("redlock.node");
}

namespace detail {

node_failure failure_of(node_errc code)
{
    boost::system::error_code ec = code;
    std::string message = ec.message();
    return node_failure{ec, std::move(message)};
}

bool is_misconfiguration(node_errc code) noexcept
{
    switch (code) {
        case node_errc::tls_failed:
        case node_errc::tls_mismatch:
        case node_errc::authentication:
        case node_errc::no_permission:
        case node_errc::not_a_master:
        case node_errc::wrong_mode:
        case node_errc::redirected:
        case node_errc::bad_database:
            return true;
        default:
            return false;
    }
}

bool is_misconfiguration(const boost::system::error_code& code) noexcept
{
    return code.category() == node_error_category() &&
           is_misconfiguration(static_cast<node_errc>(code.value()));
}

void failure_list::add(const node_failure& f)
{
    if (count_++ == 0) {
        shared_ = f.code;
    } else {
        details_ += "; ";
        mixed_ = mixed_ || f.code != shared_;
    }
    details_ += f.detail;
}

node_failure failure_list::joined(std::string what, node_errc otherwise) const
{
    what += ": ";
    what += details_;
    return node_failure{mixed_ || count_ == 0 ? make_error_code(otherwise) : shared_,
                        std::move(what)};
}

}  // namespace detail

}  // namespace redlock
