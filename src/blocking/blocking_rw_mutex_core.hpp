// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a blocking::rw_mutex and its copies share: the hold of each thread (shared or
// exclusive, `guard::shared()`), and the report of the last operation.

#include <redlock/rw_mutex.hpp>

#include "blocking/thread_holds.hpp"

namespace redlock::blocking::detail {

struct rw_mutex_core final : facade_core<redlock::rw_mutex>
{
    using facade_core::facade_core;
};

}  // namespace redlock::blocking::detail
