// SPDX-License-Identifier: BSL-1.0
#pragma once

// The decisions of the watch of one held lock, without I/O or a clock of its own: when its
// next step is due, whether that step extends the lock or declares it lost, and what an
// extension's answers lead to (a new validity and the next extension a period later; a retry
// soon after a failed or partial one, while validity lasts; loss once the answers show the
// lock gone). The instants are passed in. The watchdog (watchdog.cpp) keeps the schedule of
// all the locks of a client and does what this says. Unit-tested in
// tests/unit/test_watchdog_fsm.cpp.

#include "lock/guard_op_fsm.hpp"
#include "lock/validity.hpp"
#include "quorum/tally.hpp"

#include <chrono>

namespace redlock::detail {

/// What the watch knows of a lock (a copy of its lock_state's fields).
struct watched_lock
{
    bool owns = true;
    bool lost = false;
    /// The lock's validity.
    clock::time_point until{};
    /// When the last successful acquire or extend started: the period counts from here.
    clock::time_point extended_at{};
    /// When the watch extends it next (with auto_extend).
    clock::time_point next_extend{};
    /// Extensions made so far (manual ones too).
    int extensions = 0;
};

/// What the watch of a lock does next.
enum class watch_step {
    /// Not watched any more (released, or lost): out of the schedule.
    stop,
    /// Step again at `watch_action::at`.
    wait,
    /// Extend the lock with a round counted from `watch_action::at` (now); then
    /// `extension_done`.
    extend,
    /// The lock is lost: its validity ran out, or the nodes' answers show it gone.
    declare_lost,
};

struct watch_action
{
    watch_step step = watch_step::stop;
    clock::time_point at{};
};

class watchdog_fsm
{
  public:
    /// Extensions due within this much (or 1/100 of a lock's period, if less) of one due
    /// now go together.
    static constexpr std::chrono::milliseconds max_window{50};

    explicit watchdog_fsm(const extension_rules& rules) noexcept;

    /// The watch of `l` begins: its first extension is a period after its acquire.
    watch_action start(watched_lock& l) const noexcept;
    /// `l`'s step came due at `now`, or comes due within its coalescing window: extending a
    /// little early is the same extension, and validity counts from its start. An `extend`
    /// leaves `l` as it was, so that it may be deferred (and asked again) while the
    /// watchdog's other extension rounds run.
    watch_action due(const watched_lock& l, clock::time_point now) const noexcept;
    /// The extension round that `due` started at `start` completed at `now` with `answers`.
    watch_action extension_done(watched_lock& l, clock::time_point start, const tally& answers,
                                clock::time_point now) const noexcept;
    /// An extension outside the watch (the guard's own) moved `l`'s validity and
    /// `extended_at`: the period restarts from it.
    watch_action extended_elsewhere(watched_lock& l) const noexcept;

    /// Between extensions: a third of the expiry.
    clock::duration period() const noexcept { return period_; }
    /// After a failed extension: a twentieth of the expiry, at least 1 ms.
    clock::duration retry_after() const noexcept { return retry_after_; }
    /// How early an extension may go with others.
    clock::duration window() const noexcept { return window_; }

  private:
    /// The next step: at the next extension while one is allowed (no later than the end of
    /// validity), else at the end of validity.
    watch_action next(const watched_lock& l) const noexcept;
    bool may_extend(const watched_lock& l) const noexcept
    {
        return rules_.auto_extend && !rules_.limit_reached(l.extensions);
    }

    extension_rules rules_;
    clock::duration period_;
    clock::duration retry_after_;
    clock::duration window_;
};

}  // namespace redlock::detail
