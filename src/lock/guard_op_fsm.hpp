// SPDX-License-Identifier: BSL-1.0
#pragma once

// The decisions of a guard's operations (release, extend, valid, wait_lost), without I/O:
// whether the operation runs at all, what its round's answers make of the result, when the
// lock counts as lost, and what after a shutdown. The coroutines in guard_operations.cpp do
// what it says and tell it what came of it. Unit-tested in tests/unit/test_guard_op_fsm.cpp.
//
// How an operation uses it (on the client's strand):
// - `start(facts)`, with the lock as it is now (a release first takes the ownership with an
//   atomic exchange, and `facts.owns` says whether it got it);
// - on `run_round`, the operation's round (release: the hand-off round; extend: the extend
//   round counted from `action::start`; valid: the check round), then `round_done`;
// - on `wait_for_loss` (wait_lost), a wait on the lock's loss event, then `woken`;
// - on every action, its effects (`released`, `extended`, `declare_lost`, `watch`), then
//   `complete` ends the operation with `ec` (and `valid`).

#include <redlock/error.hpp>

#include <boost/system/error_code.hpp>

#include "lock/validity.hpp"
#include "quorum/tally.hpp"

#include <chrono>

namespace redlock {
struct options;
}  // namespace redlock

namespace redlock::detail {

using error_code = boost::system::error_code;

/// The rules of a lock's extensions, from its options; shared with the watchdog's machine.
struct extension_rules
{
    std::chrono::milliseconds expiry{};
    double drift_factor = 0.01;
    /// options::auto_extend: the watchdog extends the lock.
    bool auto_extend = false;
    /// options::auto_extend_limit (0: none). With auto_extend it bounds every extension of a
    /// hold, manual ones too.
    int extend_limit = 0;

    /// No further extension is allowed after `extensions`.
    bool limit_reached(int extensions) const noexcept
    {
        return auto_extend && extend_limit > 0 && extensions >= extend_limit;
    }
    /// The validity an extension whose round started at `start` gives.
    clock::time_point until_after(clock::time_point start) const noexcept
    {
        return valid_until(start, expiry, drift_factor);
    }
};

extension_rules extension_rules_for(const redlock::options& o) noexcept;

/// What an extension round's answers mean.
enum class extension_verdict {
    /// A quorum extended the key before the new validity ran out.
    confirmed,
    /// The lock's value is provably gone from a majority: nodes answered that the key is
    /// missing or another's, so no quorum can hold it whatever the silent nodes say.
    gone,
    /// Neither: too few answers, errors, or too late. Errors, even those that rule out a
    /// quorum for good (a misconfigured node), are no evidence that the lock is gone.
    failed,
};

/// `t`: the round's answers; `now`: when it completed; `until`: the validity it would give.
extension_verdict judge_extension(const tally& t, clock::time_point now,
                                  clock::time_point until) noexcept;

/// The lock's value is gone from a majority (see `extension_verdict::gone`).
bool definitely_gone(const tally& t) noexcept;

enum class guard_op { release, extend, valid, wait_lost };

/// What a guard's operation does next.
enum class guard_step {
    /// Run the operation's round on every node; then `round_done`.
    run_round,
    /// wait_lost: wait until the lock is lost, released, or the wait cancelled; then `woken`.
    wait_for_loss,
    /// Done, with `action::ec` (and `action::valid`).
    complete,
};

/// The lock as an operation finds it when it starts.
struct guard_facts
{
    /// The guard owns the lock (for a release: this release took the ownership).
    bool owns = false;
    /// The client was shut down (`client::async_shutdown`).
    bool shut_down = false;
    /// The lock was found lost.
    bool lost = false;
    /// Extensions made so far (the watchdog's and manual ones).
    int extensions = 0;
    /// The lock's validity.
    clock::time_point until{};
    clock::time_point now{};
};

/// What came of an operation's round.
struct round_result
{
    tally answers{};
    /// The caller cancelled the operation meanwhile.
    bool cancelled = false;
    /// When the round completed.
    clock::time_point now{};
    /// The lock's validity then (the watchdog may have moved it during the round).
    clock::time_point until{};
    /// Someone watches for the lock's loss (the watchdog, a wait, a lost slot).
    bool watched = false;
};

/// What a guard operation does next (`guard_op_fsm`).
struct guard_action
{
    guard_step step = guard_step::complete;
    /// For `complete`.
    error_code ec{};
    /// For valid's `complete`: a quorum holds the lock.
    bool valid = false;
    /// For extend's `run_round`: the validity counts from here.
    clock::time_point start{};
    /// The lock is released by this operation: its watch stops, and the waits for its
    /// loss end.
    bool released = false;
    /// The extension held: `until` is the lock's new validity, counted from `start`, and
    /// the extension counts towards the limit.
    bool extended = false;
    clock::time_point until{};
    /// The lock is lost: tell those who wait for that.
    bool declare_lost = false;
    /// wait_lost: from now on the lock's loss is watched for.
    bool watch = false;
};

class guard_op_fsm
{
  public:
    using action = guard_action;

    guard_op_fsm(guard_op op, const extension_rules& rules) noexcept : op_(op), rules_(rules) {}

    action start(const guard_facts& f) noexcept;
    action round_done(const round_result& r) const noexcept;
    /// wait_lost's wait ended: the lock was found `lost`, is still owned (`owns`), or the
    /// wait was `cancelled`.
    action woken(bool lost, bool owns, bool cancelled) const noexcept;

  private:
    action start_release(const guard_facts& f) const noexcept;
    action start_extend(const guard_facts& f) noexcept;
    action extend_done(const round_result& r) const noexcept;
    static action complete(error_code ec) noexcept;

    guard_op op_;
    extension_rules rules_;
    /// extend: the round's start.
    clock::time_point start_{};
};

}  // namespace redlock::detail
