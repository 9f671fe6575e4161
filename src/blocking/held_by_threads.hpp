// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state that a facade lock object whose holds belong to threads (a semaphore's permits, a
// read-write lock's reads and writes) shares with its copies: the guards each thread holds,
// and the report of the last operation. Threads do not wait for each other in the process:
// each acquires on the nodes at once.

#include <redlock/guard.hpp>
#include <redlock/report.hpp>

#include "blocking/blocking_client_core.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace redlock::blocking::detail {

/// The holds of one lock object, by holding thread, oldest first.
using thread_holds = std::vector<std::pair<std::thread::id, redlock::guard>>;

template <class Lock>
struct held_by_threads : facade_lock
{
    held_by_threads(std::shared_ptr<client_core> c, Lock b)
        : client(std::move(c)), base(std::move(b))
    {
    }
    held_by_threads(const held_by_threads&) = delete;
    held_by_threads& operator=(const held_by_threads&) = delete;
    ~held_by_threads()
    {
        if (registration) {
            client->forget(*registration);
        }
        // Holds still there (an object dropped while threads held it) are released in the
        // background, as any guard's are.
    }

    // Nobody waits for a turn: nothing to wake.
    void wake_waiters() override {}
    void drop_held() override
    {
        thread_holds dropped;  // released once `m` is let go
        std::lock_guard lock(m);
        dropped = std::move(held);
        held.clear();
    }

    const std::shared_ptr<client_core> client;
    /// The asynchronous lock with the user's options.
    const Lock base;
    std::optional<facade_locks::iterator> registration;

    std::mutex m;
    // Guarded by m:
    thread_holds held;
    /// The report of the last acquisition or release.
    report last;
};

/// The end of a blocking call's acquisition of one more hold for the calling thread, whose
/// outcome is `acquired`: its report becomes `last`, and on success, unless the client closed
/// meanwhile, `held` keeps the guard and the call returns true. Otherwise the guard is dropped
/// (released in the background) and the call throws `error::shut_down` if the client closed,
/// returns false for a conflict (`conflict`) when `conflict_is_false`, and throws the error
/// with the report otherwise. `m` guards `last` and `held`.
bool settle_acquisition(const client_core& c, std::mutex& m, thread_holds& held, report& last,
                        std::tuple<boost::system::error_code, redlock::guard> acquired,
                        const std::string& name, bool conflict_is_false);

}  // namespace redlock::blocking::detail
