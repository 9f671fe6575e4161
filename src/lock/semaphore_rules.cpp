// SPDX-License-Identifier: BSL-1.0
#include "lock/semaphore_rules.hpp"

#include "lock/refused_options.hpp"

namespace redlock::detail {

std::string semaphore_problem(const options& opts, std::ptrdiff_t permits)
{
    if (permits < 1) {
        return "a semaphore needs at least 1 permit (got " + std::to_string(permits) + ")";
    }
    if (std::string why = entry_lock_refusal(opts, "semaphore"); !why.empty()) {
        return why;
    }
    return first_refused(
        opts, {{&options::fencing,
                "options.fencing cannot be used on a semaphore: its holders hold at once, and a "
                "fencing token orders holders one after another"},
               {&options::fair,
                "options.fair cannot be used on a semaphore: its queue orders the waiters of a "
                "mutex"}});
}

}  // namespace redlock::detail
