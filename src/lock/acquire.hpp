// SPDX-License-Identifier: BSL-1.0
#pragma once

// One acquire of a lock, as a coroutine: the operation behind every kind's acquire and
// try_acquire, and the first step of an election's campaign.

#include <redlock/guard.hpp>

#include "lock/lock_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <tuple>

namespace redlock::detail {

/// What an acquire completes with: its error, and the guard (owning nothing on failure, but
/// with the report).
using guard_result = std::tuple<boost::system::error_code, guard>;

/// Acquires `m` (one attempt with `single_attempt`) on the client's strand, as its row of
/// rules says; cancellation as `mutex::async_acquire` documents.
boost::asio::awaitable<guard_result> acquire_op(std::shared_ptr<mutex_state> m,
                                                bool single_attempt);

}  // namespace redlock::detail
