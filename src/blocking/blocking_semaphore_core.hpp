// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a blocking::semaphore and its copies share: the permits each thread holds, and the
// report of the last operation.

#include <redlock/semaphore.hpp>

#include "blocking/held_by_threads.hpp"

namespace redlock::blocking::detail {

struct semaphore_core final : held_by_threads<redlock::semaphore>
{
    using held_by_threads::held_by_threads;
};

}  // namespace redlock::blocking::detail
