// SPDX-License-Identifier: BSL-1.0
#pragma once

// The labels that lock events and node counters take in the Prometheus families: a bounded
// set each, so that the number of series stays bounded (no lock name in any of them).

#include <redlock/lock_event.hpp>
#include <redlock/observability.hpp>

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// The kinds of lock the library names in `lock_event::type`.
inline constexpr std::array<std::string_view, 6> lock_types{"mutex", "fair",      "read",
                                                            "write", "semaphore", "election"};

/// The `outcome` label of an acquire, in `redlock_acquire_seconds`.
inline constexpr std::array<std::string_view, 5> acquire_outcomes{"acquired", "taken", "failed",
                                                                  "aborted", "other"};

/// The index of `type` in `lock_types`, or `lock_types.size()` for another.
std::size_t type_index(std::string_view type) noexcept;

/// The index in `acquire_outcomes` of an `acquired` or `acquire_failed` event: by its
/// error's code, "other" for any error but taken, failed and operation_aborted.
std::size_t acquire_outcome(const lock_event& e) noexcept;

/// The counters of `all` (several clients' nodes) added up by endpoint, in the order each
/// endpoint first appears: two clients of one node count as one node.
std::vector<node_counters> sum_by_endpoint(const std::vector<node_counters>& all);

}  // namespace redlock::detail
