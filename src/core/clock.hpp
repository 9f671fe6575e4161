// SPDX-License-Identifier: BSL-1.0
#pragma once

// The one clock of the library: every deadline, validity and back-off is on steady_clock.

#include <chrono>

namespace redlock::detail {

using clock = std::chrono::steady_clock;

/// The time left at `now` until `until` (zero or negative once it has passed).
constexpr std::chrono::microseconds remaining(clock::time_point until, clock::time_point now)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(until - now);
}

}  // namespace redlock::detail
