// SPDX-License-Identifier: BSL-1.0
#pragma once

// The Redlock validity arithmetic, on steady_clock, as plain functions.

#include "core/clock.hpp"

#include <chrono>

namespace redlock::detail {

/// The allowance for clock drift between nodes: expiry * drift_factor + 2 ms. The 2 ms
/// cover the granularity of Redis's own expiry timer.
constexpr std::chrono::microseconds drift(std::chrono::milliseconds expiry, double drift_factor)
{
    using std::chrono::microseconds;
    return microseconds(static_cast<microseconds::rep>(
               static_cast<double>(microseconds(expiry).count()) * drift_factor)) +
           std::chrono::milliseconds(2);
}

/// The instant until which a lock whose first request was sent at `start` is ours:
/// start + expiry - drift. Computing from `start`, not from the replies, is what makes
/// validity = expiry - elapsed - drift at every later instant.
constexpr clock::time_point valid_until(clock::time_point start, std::chrono::milliseconds expiry,
                                        double drift_factor)
{
    return start +
           std::chrono::duration_cast<clock::duration>(expiry - drift(expiry, drift_factor));
}

/// The per-node deadline: expiry * timeout_factor, at least 1 ms.
constexpr std::chrono::microseconds node_timeout(std::chrono::milliseconds expiry,
                                                 double timeout_factor)
{
    using std::chrono::microseconds;
    auto t = microseconds(static_cast<microseconds::rep>(
        static_cast<double>(microseconds(expiry).count()) * timeout_factor));
    return t < std::chrono::milliseconds(1) ? microseconds(std::chrono::milliseconds(1)) : t;
}

}  // namespace redlock::detail
