// SPDX-License-Identifier: BSL-1.0
#include "lock/rw_rules.hpp"

#include <algorithm>

namespace redlock::detail {

std::string rw_problem(const options& opts)
{
    if (opts.reentrant) {
        return "options.reentrant cannot be used on a read-write lock: each acquisition is an "
               "entry of its own";
    }
    if (opts.set_nx_on_extend) {
        return "options.set_nx_on_extend cannot be used on a read-write lock: an entry that "
               "expired may have let a writer in";
    }
    return {};
}

std::chrono::milliseconds writer_intent_expiry(std::chrono::milliseconds next_delay,
                                               std::chrono::microseconds per_node)
{
    const auto rounds = std::chrono::ceil<std::chrono::milliseconds>(per_node * 4);
    return std::max(next_delay, std::chrono::milliseconds(0)) + rounds;
}

}  // namespace redlock::detail
