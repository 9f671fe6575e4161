// SPDX-License-Identifier: BSL-1.0
#include "lock/fair_rules.hpp"

#include "lock/refused_options.hpp"

#include <algorithm>

namespace redlock::detail {

fair_timing fair_timing_for(std::chrono::milliseconds expiry)
{
    const auto refresh = std::max(expiry / 4, std::chrono::milliseconds{1});
    return {.refresh = refresh, .entry_ttl = 3 * refresh};
}

std::optional<std::uint64_t> agreed_ticket(const std::vector<node_outcome>& outcomes,
                                           std::size_t quorum)
{
    std::size_t proposals = 0;
    std::uint64_t ticket = 0;
    for (const node_outcome& o : outcomes) {
        if (o.status == node_status::ok && o.fencing_token > 0) {
            ++proposals;
            ticket = std::max(ticket, o.fencing_token);
        }
    }
    if (proposals < quorum) {
        return std::nullopt;
    }
    return ticket;
}

std::string fair_problem(const options& opts, std::size_t keys)
{
    if (!opts.fair) {
        return {};
    }
    if (keys != 1) {
        return "options.fair takes one key: a multi-resource lock has no single queue to order "
               "its waiters by";
    }
    if (!opts.value.empty()) {
        return "options.fair cannot be combined with a fixed options.value: the queue orders "
               "waiters by their owner values, and a release hands the key to one, so each "
               "acquisition needs a value of its own";
    }
    return first_refused(opts, {{&options::reentrant,
                                 "options.fair cannot be combined with options.reentrant: a second "
                                 "hold of the same owner would have to queue behind itself"}});
}

}  // namespace redlock::detail
