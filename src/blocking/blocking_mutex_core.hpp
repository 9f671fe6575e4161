// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a blocking::mutex and its copies share: which thread of the process has its turn
// and how many holds it has (its one entry in `held`, see thread_holds.hpp), and the guard of
// the lock last held and of the last failed acquisition.

#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include "blocking/thread_holds.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace redlock::blocking::detail {

struct mutex_core final : facade_core<redlock::mutex>
{
    mutex_core(std::shared_ptr<client_core> c, std::vector<std::string> n, redlock::mutex b)
        : facade_core(std::move(c), std::move(b)), names(std::move(n))
    {
    }

    /// The names given to make_mutex (the keys without the prefix), for the mutexes a timed
    /// attempt makes with its own `wait`.
    const std::vector<std::string> names;

    // Guarded by m:
    /// The lock last held, released (its until, token and report stay readable).
    redlock::guard last_held;
    /// The last failed acquisition, which carries the report of its last attempt.
    redlock::guard failed_attempt;
    bool last_was_failure = false;

    /// The entry of the thread that holds the lock (whichever thread it is: unlock belongs to
    /// the thread that locked, but the mutex does not check it), or null when none does (none
    /// has the turn, or the thread that has it is still acquiring or releasing).
    thread_hold* holder()
    {
        return !held.empty() && held.front().count > 0 ? &held.front() : nullptr;
    }
    /// The lock held now, or the one last held.
    const redlock::guard& latest()
    {
        const thread_hold* h = holder();
        return h ? h->guard : last_held;
    }
    /// Gives the turn back (after a failure, or when the last hold is released): the entry
    /// goes, and the threads waiting for their turn wake. Its guard, if any, goes to the caller.
    redlock::guard pass_turn() { return held.empty() ? redlock::guard{} : give_back(held.begin()); }
};

}  // namespace redlock::blocking::detail
