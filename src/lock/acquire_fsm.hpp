// SPDX-License-Identifier: BSL-1.0
#pragma once

// The decisions of one acquire, without I/O: when to attempt, when to clean up, retry, pause
// or give up, and with what error. The coroutine in acquire.cpp does what it says and tells
// it what came of it, so that the Redlock rules can be tested without a server. An acquire
// of a lock that waits in a queue also has a fair_queue_fsm, which this machine asks where
// the queue decides (join first, wait for the turn, leave before completing); a plain
// acquire has none, and runs none of it.

#include <redlock/error.hpp>

#include <boost/system/error_code.hpp>

#include "lock/fair_queue_fsm.hpp"
#include "lock/validity.hpp"

#include <chrono>

namespace redlock::detail {

using error_code = boost::system::error_code;

/// What an acquire does next.
enum class acquire_step {
    /// Join the queue on every node (a proposal each); then `joined`.
    join,
    /// Send `SET NX` (or the lock script) to every node; then `attempted`.
    attempt,
    /// Raise the fencing counters to the attempt's token; then `token_written`.
    write_back_token,
    /// The lock is held: make the guard.
    grant,
    /// Delete the failed attempt's value everywhere (no round when `action::nothing_set`);
    /// then `cleaned_up`.
    clean_up,
    /// Ask the retry delay for `action::attempt_number`; then `delay_chosen` (or
    /// `delay_failed` if the user's delay function threw).
    choose_delay,
    /// Wait `action::delay` (a release of the key may end it early); then `paused`.
    pause,
    /// Take the acquire's entry out of the queue on every node (and the key where its
    /// attempt set it), so that the next waiter need not wait for the entry's expiry; then
    /// `left`.
    leave,
    /// Done, with `action::ec`.
    complete,
};

/// The rules an acquire follows, from its options.
struct acquire_rules
{
    /// Attempts allowed (1 for try_acquire).
    int tries = 1;
    /// The attempt whose clean-up registers the acquire's client on the nodes as waiting
    /// (`kind_rules::names_next_waiter`), sent even when that attempt set nothing; 0 when it
    /// does not register. Its later attempts register themselves.
    int registers_after = 0;
    /// The whole acquire gives up by this instant (options::wait).
    clock::time_point give_up_at = clock::time_point::max();
    /// Releases wake a pausing acquire (options::wake_on_release).
    bool wake_on_release = true;
    bool reentrant = false;
    /// A granted attempt writes its token back before it counts (options::fencing).
    bool fencing = false;
    /// A node that refuses an attempt writes nothing (the lock's row,
    /// `kind_rules::refusal_writes_nothing`), so an attempt that every node refused needs no
    /// clean-up.
    bool refusal_writes_nothing = false;
};

/// What came of an attempt's round.
struct attempt_result
{
    /// A quorum accepted it with validity left.
    bool quorum_with_validity = false;
    /// A quorum answered that another owner holds the key.
    bool taken_by_other = false;
    /// At least one node answered that another owner holds the key.
    bool some_taken = false;
    /// Every node answered, and each refused the attempt.
    bool refused_everywhere = false;
    /// A node refused the attempt because of how the caller made the lock (a semaphore's
    /// permits that differ from its holders'): no attempt can succeed, whatever the others
    /// said.
    bool invalid_use = false;
};

class acquire_fsm
{
  public:
    struct action
    {
        acquire_step step = acquire_step::complete;
        /// For `complete`.
        error_code ec{};
        /// For `pause`.
        std::chrono::milliseconds delay{};
        /// For `choose_delay`: the attempt that just failed (from 1).
        int attempt_number = 0;
        /// From now on, a release of one of the keys may wake this acquire: it enters the
        /// client's line of waiters (and stays there until it completes).
        bool watch_releases = false;
        /// For `clean_up`: the attempt set nothing on any node, so there is nothing to delete
        /// and no round to send; the acquire goes on as after a clean-up.
        bool nothing_set = false;
    };

    /// `queue`: the acquire's place in a queue (first come, first served), which decides
    /// when it joins, waits for its turn and leaves; null for an acquire without one. It
    /// must outlive this machine.
    explicit acquire_fsm(acquire_rules rules, fair_queue_fsm* queue = nullptr)
        : rules_(rules), queue_(queue)
    {
    }

    /// The first step. `line_is_ours`: the key is held by, or being handed to, another
    /// acquire of this client while others wait for it (`waiter_queue::ours`); the queue's
    /// order decides for an acquire with a queue.
    action start(bool line_is_ours);
    /// The queue's join completed: `agreed`, a quorum proposed, so its ticket is known
    /// (`fair_queue_fsm::joined`); `quorum_ruled_out` as for `cleaned_up`.
    action joined(bool agreed, bool quorum_ruled_out, bool cancelled);
    /// The attempt's round completed (`cancelled`: the caller cancelled meanwhile).
    action attempted(attempt_result r, bool cancelled);
    /// The fencing token's write-back completed; `confirmed`: by a quorum before the
    /// validity ran out.
    action token_written(bool confirmed, bool cancelled);
    /// The clean-up after a failed attempt completed. `quorum_ruled_out`: the nodes' errors
    /// are of the kind retrying cannot fix, and leave too few nodes for a quorum.
    /// A waiter in a queue that waits for its turn (`fair_queue_fsm::waits_for_turn`) waits
    /// until `now` plus its refresh period, or to the end of `wait`, whichever comes first.
    action cleaned_up(bool quorum_ruled_out, bool cancelled, clock::time_point now = {});
    /// The retry delay for the attempt that failed, chosen at `now`.
    action delay_chosen(std::chrono::milliseconds delay, clock::time_point now);
    /// The user's delay function threw: a bad option, not a lock outcome.
    action delay_failed();
    /// The pause ended (its time, or a release).
    action paused(bool cancelled);
    /// A queued waiter's pause ended because a quorum of nodes handed it the key (never for
    /// a fenced acquire): it holds the lock if `valid`, validity being left; otherwise it
    /// attempts, which keeps the keys handed to it.
    action handed_over(bool valid, bool cancelled);
    /// The queue's leave completed: it completes with the error that made it leave.
    action left() const { return complete(last_); }

    /// The current attempt, from 1.
    int attempt_number() const { return attempt_; }

  private:
    action retry_or_give_up(bool watch);
    action attempt();
    action wait_for_turn(clock::time_point now);
    static action complete(error_code ec);
    /// Completes with `ec`, after leaving the queue if it has joined it.
    action finish(error_code ec);

    acquire_rules rules_;
    fair_queue_fsm* queue_;
    int attempt_ = 0;
    /// The error the acquire completes with if it gives up now.
    error_code last_ = error::failed;
    bool watching_ = false;
    attempt_result result_{};
};

}  // namespace redlock::detail
