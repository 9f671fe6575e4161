// SPDX-License-Identifier: BSL-1.0
#pragma once

// How the blocking facade's timed calls (`try_lock_for`, `try_acquire_until`, ...) turn the
// caller's duration or deadline into the milliseconds its compiled code tries for.

#include <chrono>

namespace redlock::blocking::detail {

/// The longest a timed call tries: `options::wait` allows no more.
inline constexpr std::chrono::milliseconds longest_wait{std::chrono::hours(24 * 365)};

/// `timeout` in whole milliseconds, rounded up and at most `longest_wait`; 0 (one attempt)
/// when it is not positive.
template <class Rep, class Period>
std::chrono::milliseconds timed_wait(const std::chrono::duration<Rep, Period>& timeout)
{
    if (timeout <= timeout.zero()) {
        return std::chrono::milliseconds(0);
    }
    // Compared in floating point: no duration type can overflow there.
    using seconds = std::chrono::duration<double>;
    if (seconds(timeout) >= seconds(longest_wait)) {
        return longest_wait;
    }
    return std::chrono::ceil<std::chrono::milliseconds>(timeout);
}

/// `timed_wait(deadline - Clock::now())`: the deadline is read once, on `Clock`, and followed
/// on `std::chrono::steady_clock` from then on.
template <class Clock, class Duration>
std::chrono::milliseconds timed_wait_until(const std::chrono::time_point<Clock, Duration>& deadline)
{
    return timed_wait(deadline - Clock::now());
}

}  // namespace redlock::blocking::detail
