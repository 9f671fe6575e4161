// SPDX-License-Identifier: BSL-1.0
#pragma once

// What the blocking calls of every lock object share: their exceptions, what counts as a
// conflict, and the options of a timed attempt.

#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <string>

namespace redlock::blocking::detail {

using steady = std::chrono::steady_clock;

/// How a blocking call waits: until it has what it asks for, for one attempt, or until a
/// deadline.
enum class kind { wait, once, timed };

/// `what` + " after N attempts [node: status; node: status (detail); ...]".
std::string with_report(std::string what, const report& r);

/// Throws `boost::system::system_error` with `ec` and `what`.
[[noreturn]] void fail(boost::system::error_code ec, const std::string& what);

/// Another owner was seen holding the lock: a conflict, which the try_ calls report as
/// false. An attempt that no node could answer is not one: the nodes may be down.
bool conflict(boost::system::error_code ec, const report& r);

/// Options for the timed calls: attempts until `deadline`, the last of them starting at it,
/// so that a false never comes before the deadline (as TimedLockable requires) and a release
/// seen meanwhile still wakes the wait. `wait` is only a backstop: the delay after the
/// deadline ends the attempts.
options until_deadline(const options& o, std::chrono::steady_clock::time_point deadline);

}  // namespace redlock::blocking::detail
