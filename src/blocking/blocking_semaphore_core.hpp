// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a blocking::semaphore and its copies share: the permits each thread holds, and the
// report of the last operation.

#include <redlock/semaphore.hpp>

#include "blocking/thread_holds.hpp"

namespace redlock::blocking::detail {

struct semaphore_core final : facade_core<redlock::semaphore>
{
    using facade_core::facade_core;
};

}  // namespace redlock::blocking::detail
