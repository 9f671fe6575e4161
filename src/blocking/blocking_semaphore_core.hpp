// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a blocking::semaphore and its copies share: the permits each thread holds, and the
// report of the last operation.

#include <redlock/guard.hpp>
#include <redlock/report.hpp>
#include <redlock/semaphore.hpp>

#include "blocking/blocking_client_core.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace redlock::blocking::detail {

struct semaphore_core final : facade_lock
{
    semaphore_core(std::shared_ptr<client_core> c, redlock::semaphore b)
        : client(std::move(c)), base(std::move(b))
    {
    }
    semaphore_core(const semaphore_core&) = delete;
    semaphore_core& operator=(const semaphore_core&) = delete;
    ~semaphore_core()
    {
        if (registration) {
            client->forget(*registration);
        }
        // Permits still held (a semaphore dropped while threads held some) are released in
        // the background, as any guard's are.
    }

    // Threads do not wait for each other at a semaphore: nothing to wake.
    void wake_waiters() override {}
    void drop_held() override
    {
        std::vector<std::pair<std::thread::id, redlock::guard>> dropped;  // released unlocked
        std::lock_guard lock(m);
        dropped = std::move(held);
        held.clear();
    }

    const std::shared_ptr<client_core> client;
    /// The asynchronous semaphore with the user's options.
    const redlock::semaphore base;
    std::optional<facade_locks::iterator> registration;

    std::mutex m;
    // Guarded by m:
    /// The permits held, by the thread that took each, oldest first.
    std::vector<std::pair<std::thread::id, redlock::guard>> held;
    /// The report of the last acquisition or release.
    report last;
};

}  // namespace redlock::blocking::detail
