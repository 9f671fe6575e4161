// SPDX-License-Identifier: BSL-1.0
#include <redlock/error.hpp>

#include <string>

namespace redlock {
namespace {

class category final : public boost::system::error_category
{
  public:
    const char* name() const noexcept override { return "redlock"; }

    std::string message(int ev) const override
    {
        switch (static_cast<error>(ev)) {
            case error::taken:
                return "lock taken: another owner holds it on a quorum of nodes";
            case error::failed:
                return "lock failed: no quorum of nodes granted it in the tries allowed "
                       "(check the per-node report for unreachable or slow nodes)";
            case error::not_held:
                // One value for two causes (see guard.hpp): the message names both, the owned
                // state first, which the caller can check with guard::owns_lock().
                return "lock not held: the guard owns no lock (released already, or never "
                       "acquired), or fewer than a quorum of nodes still had its value (it "
                       "expired or was taken over)";
            case error::extend_failed:
                return "extend failed: no quorum of nodes extended the lock within its validity";
            case error::expired:
                return "lock expired: its validity ran out before the operation";
            case error::invalid_argument:
                return "invalid argument: check the client configuration and lock options";
            case error::shut_down:
                return "client shut down: no further lock operations are accepted";
            case error::lost:
                return "lock lost while held: it is gone from a majority of nodes or its validity "
                       "ran out unconfirmed (the protected work must stop)";
            case error::stale_token:
                return "stale fencing token: the fenced resource has seen a newer token, so the "
                       "lock behind this request has passed to another owner";
            case error::misconfigured:
                return "nodes misconfigured: too many nodes fail in a way retrying cannot fix "
                       "(password, replica, cluster mode or TLS) for a quorum; check the "
                       "per-node report";
        }
        return "unknown redlock error " + std::to_string(ev);
    }
};

}  // namespace

const boost::system::error_category& error_category() noexcept
{
    static const category instance;
    return instance;
}

}  // namespace redlock
