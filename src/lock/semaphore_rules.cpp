// SPDX-License-Identifier: BSL-1.0
#include "lock/semaphore_rules.hpp"

namespace redlock::detail {

std::string semaphore_problem(const options& opts, std::ptrdiff_t permits)
{
    if (permits < 1) {
        return "a semaphore needs at least 1 permit (got " + std::to_string(permits) + ")";
    }
    if (opts.reentrant) {
        return "options.reentrant cannot be used on a semaphore: each acquisition takes a "
               "permit of its own";
    }
    if (opts.fencing) {
        return "options.fencing cannot be used on a semaphore: its holders hold at once, and a "
               "fencing token orders holders one after another";
    }
    if (opts.fair) {
        return "options.fair cannot be used on a semaphore: its queue orders the waiters of a "
               "mutex";
    }
    if (opts.set_nx_on_extend) {
        return "options.set_nx_on_extend cannot be used on a semaphore: a permit that expired "
               "may be another holder's by now";
    }
    return {};
}

}  // namespace redlock::detail
