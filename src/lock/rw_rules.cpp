// SPDX-License-Identifier: BSL-1.0
#include "lock/rw_rules.hpp"

#include "lock/refused_options.hpp"

#include <algorithm>

namespace redlock::detail {

std::string rw_problem(const options& opts)
{
    if (std::string why = entry_lock_refusal(opts, "read-write lock"); !why.empty()) {
        return why;
    }
    return first_refused(opts, {{&options::fair,
                                 "options.fair cannot be used on a read-write lock: its queue "
                                 "orders the waiters of a mutex"}});
}

std::chrono::milliseconds writer_intent_expiry(std::chrono::milliseconds next_delay,
                                               std::chrono::microseconds per_node)
{
    const auto rounds = std::chrono::ceil<std::chrono::milliseconds>(per_node * 4);
    return std::max(next_delay, std::chrono::milliseconds(0)) + rounds;
}

}  // namespace redlock::detail
