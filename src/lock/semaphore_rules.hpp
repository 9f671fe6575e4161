// SPDX-License-Identifier: BSL-1.0
#pragma once

// What a semaphore may be made with. Pure.

#include <redlock/options.hpp>

#include <cstddef>
#include <string>

namespace redlock::detail {

/// Why a semaphore of `permits` permits cannot be made with `opts` (beyond what `validate`
/// says of any lock), empty when it can: at least one permit; a permit is one holder's, so
/// not reentrant; several holders at once have no order for fencing tokens to follow; and a
/// permit that expired may be another holder's by now, so an extend never recreates it.
std::string semaphore_problem(const options& opts, std::ptrdiff_t permits);

}  // namespace redlock::detail
