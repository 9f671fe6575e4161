// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a blocking::mutex and its copies share: which thread of the process has its turn
// and how many holds it has, and the guard of the lock held (or last held).

#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include "blocking/blocking_client_core.hpp"

#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace redlock::blocking::detail {

struct mutex_core final : facade_lock
{
    mutex_core(std::shared_ptr<client_core> c, std::vector<std::string> n, redlock::mutex b)
        : client(std::move(c)), names(std::move(n)), base(std::move(b))
    {
    }
    mutex_core(const mutex_core&) = delete;
    mutex_core& operator=(const mutex_core&) = delete;
    ~mutex_core()
    {
        if (registration) {
            client->forget(*registration);
        }
        // `current`, if it still owns its lock (a mutex dropped while locked), releases it in
        // the background as any guard does.
    }

    const std::shared_ptr<client_core> client;
    /// The names given to make_mutex (the keys without the prefix), for the mutexes a timed
    /// attempt makes with its own `wait`.
    const std::vector<std::string> names;
    /// The asynchronous mutex with the user's options.
    const redlock::mutex base;
    std::optional<facade_locks::iterator> registration;

    std::mutex m;
    /// Signalled when the turn passes, and when the client shuts down.
    std::condition_variable turn;
    // Guarded by m:
    /// A thread has its turn: it is acquiring or holds the lock.
    bool busy = false;
    std::thread::id owner;
    /// Holds of `owner` (more than 1 only for a reentrant mutex); 0 while acquiring.
    int holds = 0;
    /// The lock held, or the last one held (its until, token and report stay readable).
    redlock::guard current;
    /// The last failed acquisition, which carries the report of its last attempt.
    redlock::guard failed_attempt;
    bool last_was_failure = false;

    void wake_waiters() override
    {
        std::lock_guard lock(m);
        turn.notify_all();
    }
    void drop_held() override
    {
        redlock::guard held;  // released once `m` is let go
        std::lock_guard lock(m);
        held = std::move(current);
        holds = 0;
    }

    /// Gives the turn back (after a failure, or when the last hold is released).
    void pass_turn()
    {
        busy = false;
        owner = {};
        holds = 0;
        turn.notify_all();
    }
};

}  // namespace redlock::blocking::detail
