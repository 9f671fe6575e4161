// SPDX-License-Identifier: BSL-1.0
#pragma once

// The arithmetic of a fair lock's queue, without I/O: how often a waiter refreshes its entry,
// how long an entry outlives its last refresh, the ticket a waiter takes from the nodes'
// proposals, and what a fair lock may be made with.

#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// How a fair waiter keeps its place in the queue.
struct fair_timing
{
    /// A waiter that is not told of its turn attempts again (and so refreshes its entry) this
    /// long after its last attempt: a quarter of the expiry, at least 1 ms.
    std::chrono::milliseconds refresh{};
    /// An entry expires on its node this long after its last refresh: three refresh periods,
    /// so that two refreshes in a row may fail without the waiter losing its place.
    std::chrono::milliseconds entry_ttl{};
    /// The longest a waiter that crashed keeps the others waiting once it would be the
    /// head: its entry's life, then the next waiter's own refresh. It equals the expiry, the
    /// bound a crashed holder has.
    std::chrono::milliseconds crash_bound() const { return entry_ttl + refresh; }
};

fair_timing fair_timing_for(std::chrono::milliseconds expiry);

/// The ticket of a waiter whose join was answered with `outcomes` (a node's proposal in its
/// `fencing_token`): the largest proposal once at least `quorum` nodes proposed, none
/// otherwise. Taking the largest of a majority is what makes tickets follow real time: a
/// join that begins after another waiter's ticket was committed on a majority meets one of
/// those nodes, whose proposal exceeds that ticket (docs/safety.md).
std::optional<std::uint64_t> agreed_ticket(const std::vector<node_outcome>& outcomes,
                                           std::size_t quorum);

/// Why a fair lock of `keys` keys cannot be made with `opts` (beyond what `validate` says of
/// any lock), empty when it can: one key, whose queue decides the order; no fixed owner value,
/// since two waiters with one value would be one entry, and a key handed to that value would
/// be held by both; and not reentrant, since a second hold of the same owner would have to
/// queue behind itself.
std::string fair_problem(const options& opts, std::size_t keys);

}  // namespace redlock::detail
