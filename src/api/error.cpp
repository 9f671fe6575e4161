// SPDX-License-Identifier: BSL-1.0
#include <redlock/error.hpp>

#include <iterator>
#include <string>

namespace redlock {
namespace {

struct described
{
    error code;
    const char* message;
};

// One entry per error, in the order of their values.
constexpr described messages[] = {
    {error::taken, "lock taken: another owner holds it on a quorum of nodes"},
    {error::failed,
     "lock failed: no quorum of nodes granted it in the tries allowed (check the per-node "
     "report for unreachable or slow nodes)"},
    // One value for two causes (see guard.hpp): the message names both, the owned state
    // first, which the caller can check with guard::owns_lock().
    {error::not_held,
     "lock not held: the guard owns no lock (released already, or never acquired), or fewer "
     "than a quorum of nodes still had its value (it expired or was taken over)"},
    {error::extend_failed,
     "extend failed: no quorum of nodes extended the lock within its validity"},
    {error::expired, "lock expired: its validity ran out before the operation"},
    {error::invalid_argument, "invalid argument: check the client configuration and lock options"},
    {error::shut_down, "client shut down: no further lock operations are accepted"},
    {error::lost,
     "lock lost while held: it is gone from a majority of nodes or its validity ran out "
     "unconfirmed (the protected work must stop)"},
    {error::stale_token,
     "stale fencing token: the fenced resource has seen a newer token, so the lock behind "
     "this request has passed to another owner"},
    {error::misconfigured,
     "nodes misconfigured: too many nodes fail in a way retrying cannot fix (password, "
     "replica, cluster mode or TLS) for a quorum; check the per-node report"},
};

constexpr bool in_value_order()
{
    for (std::size_t i = 0; i < std::size(messages); ++i) {
        if (static_cast<std::size_t>(messages[i].code) != i + 1) {
            return false;
        }
    }
    return true;
}
static_assert(in_value_order(), "messages[i] describes the error of value i + 1");

class category final : public boost::system::error_category
{
  public:
    const char* name() const noexcept override { return "redlock"; }

    std::string message(int ev) const override
    {
        if (ev >= 1 && static_cast<std::size_t>(ev) <= std::size(messages)) {
            return messages[ev - 1].message;
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
