// SPDX-License-Identifier: BSL-1.0
#pragma once

// The rounds that a lock's operations run on the nodes, shared by acquire, the guard's
// operations and the watchdog.

#include <redlock/report.hpp>

#include "lock/lock_state.hpp"
#include "lock/validity.hpp"
#include "quorum/quorum.hpp"
#include "quorum/tally.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace redlock::detail {

report make_report(std::vector<node_outcome> outcomes, int attempts);

/// Deletes (or, reentrant, decrements) `m`'s keys where they hold `value`. The round
/// completes once `rule` decides; the deletes still pending then go on in the background, so
/// that a stopped node delays neither the caller nor the next attempt (each connection runs
/// its requests in order, so an attempt queued later cannot overtake them).
round release_round(const mutex_state& m, std::string_view value, bool announce, stop_rule rule);

/// A round of `req` that takes back what `value` did on `m`'s nodes (as `release_round`):
/// it completes once `rule` decides, and what is still pending goes on in the background.
round background_round(const mutex_state& m, std::string_view value, request req, stop_rule rule);

/// The release of a held lock, handed to the client's longest-waiting acquire of each key
/// (see `waiter_queue::hand_off`): that acquire tries at once, and its requests follow the
/// release's on every connection. For a single key the client holds its writes until that
/// attempt is queued, so that both go out in one write per node, and the release is sent
/// without its message: the key is never free, and other clients' waiters would only wake to
/// lose. A reentrant release may only lower a count, so it leaves the wake-up to the nodes'
/// messages. A semaphore's or a writer's release wakes the client's waiters of the key that
/// it may let in (`waiter_queue::released`) before its requests are written.
round handing_off(const lock_state& l);

/// Resets the expiry of a held lock's keys, counted from `start`.
round extend_round(const lock_state& l, clock::time_point start);

/// Keeps the outcomes of a round of one of a guard's operations as the guard's report, and
/// counts them towards the lock's quorum. (A plain function rather than a coroutine around
/// `run_round`: an operation awaits `run_round` itself, which saves a frame.)
tally keep_report(lock_state& l, std::vector<node_outcome> outcomes);

/// The release a guard's destructor schedules: nobody awaits it, the client counts it as
/// background work.
void release_in_background(const std::shared_ptr<lock_state>& l);

}  // namespace redlock::detail
