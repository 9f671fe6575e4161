// SPDX-License-Identifier: BSL-1.0
#include "core/node_error.hpp"

namespace redlock {
namespace {

// The messages of the codes whose detail is their message alone (timed_out and the reasons a
// node was not awaited) are what reports show for them.
class node_category final : public boost::system::error_category
{
  public:
    const char* name() const noexcept override { return "redlock.node"; }

    std::string message(int ev) const override
    {
        switch (static_cast<node_errc>(ev)) {
            case node_errc::timed_out:
                return "no reply before the per-node deadline";
            case node_errc::connect_timed_out:
                return "connecting (TLS, AUTH, SELECT, finding a Sentinel node's master) took "
                       "longer than connect_timeout";
            case node_errc::connect_failed:
                return "cannot connect: the host name did not resolve, or the connection was "
                       "refused";
            case node_errc::connection_lost:
                return "the connection broke: a read or a write failed, or the server closed it";
            case node_errc::tls_failed:
                return "TLS handshake refused: check the CA file, the server's certificate and "
                       "the node's host name";
            case node_errc::tls_mismatch:
                return "TLS on one side only: a TLS URL (rediss://) for a plain port, or a plain "
                       "URL (redis://) for a TLS port";
            case node_errc::authentication:
                return "authentication refused: check the URL's credentials against the "
                       "server's";
            case node_errc::no_permission:
                return "the user's ACL does not allow the lock's commands or keys";
            case node_errc::not_a_master:
                return "the node is a replica: list masters";
            case node_errc::wrong_mode:
                return "cluster mode mismatch: list a Redis Cluster as redis-cluster://, a "
                       "standalone server as redis://";
            case node_errc::redirected:
                return "the server redirected the request (MOVED, ASK): list a Redis Cluster as "
                       "redis-cluster://";
            case node_errc::bad_database:
                return "the server has fewer databases than the URL's db number";
            case node_errc::cluster_down:
                return "the cluster cannot serve the key's slot now";
            case node_errc::server_error:
                return "the server answered with an error";
            case node_errc::protocol_error:
                return "protocol error: the server sent what is not a Redis reply, or a reply "
                       "nobody asked for";
            case node_errc::unexpected_reply:
                return "a reply that the command cannot have";
            case node_errc::not_replicated:
                return "fewer replicas acknowledged the write than options::wait_for_replicas "
                       "asks";
            case node_errc::master_switched:
                return "the Sentinels switched the node's master (a failover)";
            case node_errc::no_master:
                return "no Sentinel named the node's master";
            case node_errc::closed:
                return "the client closed the connection";
            case node_errc::cancelled:
                return "not awaited: the operation was cancelled";
            case node_errc::decided_by_quorum:
                return "not awaited: the outcome was decided by a quorum of the other nodes";
            case node_errc::quorum_impossible:
                return "not awaited: a quorum was no longer possible";
            case node_errc::in_background:
                return "still pending when the outcome was decided: the request goes on in the "
                       "background";
        }
        return "unknown redlock.node error " + std::to_string(ev);
    }
};

}  // namespace

const boost::system::error_category& node_error_category() noexcept
{
    static const node_category instance;
    return instance;
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
