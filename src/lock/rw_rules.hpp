// SPDX-License-Identifier: BSL-1.0
#pragma once

// What a read-write lock may be made with, and how long a waiting writer's intent lasts. Pure.

#include <redlock/options.hpp>

#include <chrono>
#include <string>

namespace redlock::detail {

/// Why a read-write lock cannot be made with `opts` (beyond what `validate` says of any lock),
/// empty when it can: each acquisition is an entry of its own, so not reentrant; an entry
/// that expired may have let a writer in, so an extend never recreates it; and the fair
/// queue orders the waiters of a mutex, not readers and writers, so not fair.
std::string rw_problem(const options& opts);

/// How long the intent of a writer that waits for readers keeps new readers out: until its
/// next attempt refreshes it, that is the rest of this attempt, its clean-up, the pause of
/// `next_delay` and the next attempt's way to the node, each of the rounds bounded by the
/// per-node deadline `per_node`; one more per-node deadline covers the nodes' clock drift
/// and the rounds' ends. A writer that died stops keeping readers out once it has passed.
std::chrono::milliseconds writer_intent_expiry(std::chrono::milliseconds next_delay,
                                               std::chrono::microseconds per_node);

}  // namespace redlock::detail
