// SPDX-License-Identifier: BSL-1.0
#pragma once

// The watch of held locks: declares a lock lost when its validity runs out and, with
// options::auto_extend, extends it before that. What each lock's watch does and when
// (watchdog_fsm.hpp) is decided by its watchdog_fsm; this runs it: each watched lock sits in
// its client's watchdog schedule at the instant of its next step, and the extension rounds
// run here, a bounded number at once.

#include "lock/validity.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// Extends the held locks of one client that have `options::auto_extend` (and watches those
/// whose loss someone waits for): one schedule and one timer for all of them, rather than a
/// timer and a coroutine per lock. On the client's strand only. The pending timer wait holds
/// the watchdog (and through it the scheduled locks), as a timer per lock would: destroying
/// the io_context frees them.
class watchdog : public std::enable_shared_from_this<watchdog>
{
  public:
    explicit watchdog(const boost::asio::any_io_executor& strand);

    /// Schedules `l`'s next step at `due` (moves it if already scheduled).
    void schedule(const std::shared_ptr<lock_state>& l, clock::time_point due);
    /// Unschedules `l` if it is scheduled.
    void remove(lock_state& l);

    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    /// Extension rounds the watchdog runs at once; locks due meanwhile wait their turn (a
    /// burst of them must not flood the connections past the per-node deadline).
    static constexpr std::size_t max_extending = 256;
    /// Whether another extension round may start now; if so it is counted as running.
    bool start_extension();
    /// An extension round started by `start_extension` finished: the locks that waited for
    /// it go now.
    void extension_done();

  private:
    struct item
    {
        clock::time_point due;
        std::shared_ptr<lock_state> lock;
    };
    void place(std::size_t i, item it);
    void sift_up(std::size_t i, item it);
    void sift_down(std::size_t i, item it);
    void erase(std::size_t i);
    void arm();
    void fire();

    std::vector<item> heap_;  // a binary min-heap on `due`; lock_state::watch_slot is the index
    boost::asio::steady_timer timer_;
    bool armed_ = false;
    clock::time_point armed_for_{};
    std::uint64_t ticket_ = 0;
    std::size_t extending_ = 0;
    bool firing_ = false;
    /// Locks are due but wait for extension rounds to finish.
    bool starved_ = false;
    std::vector<item> batch_;
};

/// Starts watching `l` (once; later calls do nothing). From the strand or a user's thread.
void start_watch(const std::shared_ptr<lock_state>& l);
/// On the strand: an extension outside the watchdog moved `l`'s validity; the watch's period
/// restarts from it.
void note_extended(const std::shared_ptr<lock_state>& l);
/// On the strand, after `l.owns` was cleared: the watch and the waits for loss stop.
void note_released(lock_state& l);
/// On the strand. Once only: wakes async_wait_lost and emits the guard's lost slot.
void declare_lost(lock_state& l);

}  // namespace redlock::detail
