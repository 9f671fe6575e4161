// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a blocking::rw_mutex and its copies share: the hold of each thread (shared or
// exclusive, `guard::shared()`), and the report of the last operation.

#include <redlock/rw_mutex.hpp>

#include "blocking/held_by_threads.hpp"

namespace redlock::blocking::detail {

struct rw_mutex_core final : held_by_threads<redlock::rw_mutex>
{
    using held_by_threads::held_by_threads;
};

}  // namespace redlock::blocking::detail
