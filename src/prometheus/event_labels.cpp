// SPDX-License-Identifier: BSL-1.0
#include "prometheus/event_labels.hpp"

#include <redlock/error.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>

namespace redlock::detail {

std::size_t type_index(std::string_view type) noexcept
{
    return static_cast<std::size_t>(std::find(lock_types.begin(), lock_types.end(), type) -
                                    lock_types.begin());
}

std::size_t acquire_outcome(const lock_event& e) noexcept
{
    if (e.kind == lock_event_kind::acquired) {
        return 0;
    }
    if (e.error == error::taken) {
        return 1;
    }
    if (e.error == error::failed) {
        return 2;
    }
    if (e.error == boost::asio::error::operation_aborted) {
        return 3;
    }
    return 4;
}

std::vector<node_counters> sum_by_endpoint(const std::vector<node_counters>& all)
{
    std::vector<node_counters> sums;
    for (const node_counters& n : all) {
        auto same = std::find_if(sums.begin(), sums.end(),
                                 [&](const node_counters& s) { return s.endpoint == n.endpoint; });
        if (same == sums.end()) {
            sums.push_back(n);
            continue;
        }
        same->requests += n.requests;
        same->replies += n.replies;
        same->errors += n.errors;
        same->timeouts += n.timeouts;
        same->abandoned += n.abandoned;
        same->reconnects += n.reconnects;
        same->latency_total += n.latency_total;
    }
    return sums;
}

}  // namespace redlock::detail
