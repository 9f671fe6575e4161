// SPDX-License-Identifier: BSL-1.0
#pragma once

// How a lock object of the blocking facade tracks what the threads of the process hold
// through it and its copies: one entry per hold, naming the thread that took it, with the guard
// that holds it. The kinds differ only in what they allow. A mutex has one entry at most:
// its thread's turn, taken before it acquires on the nodes (so that one thread of the process
// at a time does), counted for a reentrant mutex. A read-write lock has one entry per thread,
// a semaphore any number; their threads do not wait for each other in the process, each
// acquires on the nodes at once.

#include <redlock/guard.hpp>
#include <redlock/report.hpp>

#include "blocking/blocking_client_core.hpp"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace redlock::blocking::detail {

/// One hold of a lock object by one thread.
struct thread_hold
{
    std::thread::id thread;
    /// The lock held; empty while the thread is still acquiring (a mutex's turn).
    redlock::guard guard;
    /// How many times the thread took it: more than 1 only for a reentrant mutex, 0 while it is
    /// still acquiring.
    int count = 0;
};

/// The holds of one lock object, oldest first.
using thread_holds = std::vector<thread_hold>;

/// The state a lock object of the facade shares with its copies: the client, the asynchronous
/// lock with the user's options, the holds of the process's threads and the report of the last
/// acquisition or release.
template <class Lock>
struct facade_core : facade_lock
{
    facade_core(std::shared_ptr<client_core> c, Lock b) : client(std::move(c)), base(std::move(b))
    {
    }
    facade_core(const facade_core&) = delete;
    facade_core& operator=(const facade_core&) = delete;
    ~facade_core()
    {
        if (registration) {
            client->forget(*registration);
        }
        // Holds still there (an object dropped while threads held it) are released in the
        // background, as any guard's are.
    }

    void wake_waiters() override
    {
        std::lock_guard lock(m);
        freed.notify_all();
    }
    void drop_held() override
    {
        thread_holds dropped;  // released once `m` is let go
        std::lock_guard lock(m);
        dropped = std::move(held);
        held.clear();
        freed.notify_all();
    }

    /// The calling thread's newest hold, or `held.end()`. Under `m`.
    thread_holds::iterator own_hold()
    {
        const auto self = std::this_thread::get_id();
        const auto it = std::find_if(held.rbegin(), held.rend(),
                                     [self](const thread_hold& h) { return h.thread == self; });
        return it == held.rend() ? held.end() : std::next(it).base();
    }
    /// Takes `it` out of `held` and wakes the threads waiting for a turn; its guard, which the
    /// caller destroys (releasing it in the background if it still owns the lock) or keeps,
    /// after letting `m` go. Under `m`.
    redlock::guard give_back(thread_holds::iterator it)
    {
        redlock::guard g = std::move(it->guard);
        held.erase(it);
        freed.notify_all();
        return g;
    }

    const std::shared_ptr<client_core> client;
    const Lock base;
    std::optional<facade_locks::iterator> registration;

    std::mutex m;
    /// Signalled when a hold is given back, and when the client shuts down: a mutex's threads
    /// wait on it for their turn.
    std::condition_variable freed;
    // Guarded by m:
    thread_holds held;
    /// The report of the last acquisition or release (a mutex reads its guards' instead).
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
