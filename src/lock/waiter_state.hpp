// SPDX-License-Identifier: BSL-1.0
#pragma once

// Where an acquire that waits to retry a lock stands, and what moves it on, without I/O. The
// client's line of waiters for a key (waiters.hpp) decides whom a release wakes or hands the
// lock to from these states alone; the acquire's coroutine (acquire.cpp) reports its own
// pauses and attempts. The states say nothing of the lock's kind: whom a release wakes is the
// line's rule, not the waiter's.

#include <optional>

namespace redlock::detail {

/// Where a waiting acquire stands. It joins its keys' lines `attempting` (its attempt failed
/// because another owner holds a key, or it joins without one while the client's own
/// acquires take the key in turn) and may leave from any state: granted, cancelled, or out
/// of tries.
enum class waiter_state {
    /// Making an attempt, cleaning up after one, or on its way to its pause: the client's
    /// contender for its keys, which a release message does not wake but reaches all the
    /// same.
    attempting,
    /// Attempting, and a release message came meanwhile: the lock may be free by the time
    /// the attempt has failed, so the next pause is skipped.
    missed_release,
    /// Attempting again at once, its pause skipped for a missed release. A release message
    /// now does not skip the next pause as well: once in a row at most, so that releases
    /// seen during attempts cannot keep a waiter from ever pausing.
    retrying_at_once,
    /// In its retry pause, which a wake-up ends early.
    pausing,
    /// In its retry pause, whose end the client moved sooner when it yielded the key: the
    /// wait under way ended for the move, not for a wake-up, and goes on to the new end.
    pause_moved,
    /// Woken by a hand-off of this client and not attempting yet: its attempt follows the
    /// release at once (with the nodes' writes held for it, if the hand-off holds them).
    woken_by_hand_off,
    /// Woken by a node's release message and not attempting yet: the other clients' waiters
    /// heard it as well, so its attempt waits a random moment first (`release_wake_spread`).
    woken_by_release_message,
    /// A fair waiter between its attempts: its entry waits in the nodes' queues, and only a
    /// message that names it as the queue's head ends the wait early (otherwise its refresh
    /// time does). Hand-offs and other release messages do not reach it.
    queued,
    /// A fair waiter told that it is the head and not attempting yet: it alone was named, so
    /// its attempt follows at once.
    woken_as_head,
};

/// What happens to a waiting acquire.
enum class waiter_event {
    /// Its attempt failed (or it joined without one) and it reaches its retry pause.
    pause_begins,
    /// The wait of its pause completed: its time ran out, a wake-up or a move ended it, or
    /// its caller cancelled.
    pause_ends,
    /// Its attempt's requests are being queued.
    attempt_begins,
    /// A node's release message of one of its keys, while it is not pausing.
    release_seen,
    /// The client releases one of its keys and hands it the lock.
    hand_off,
    /// A node's release message wakes it.
    release_message,
    /// The client yields one of its keys: its pause ends sooner.
    pause_moved,
    /// A fair waiter's attempt failed (or its join did) and it waits for its turn.
    turn_wait_begins,
    /// A node's message names this fair waiter as the head of the queue.
    named_head,
};

/// The state that `e` leads to from `s`, or none when `e` cannot happen in `s`.
std::optional<waiter_state> next_state(waiter_state s, waiter_event e);

/// In its retry pause: a release may wake it (`hand_off`, `release_message`) and a yield
/// may move the pause's end (`pause_moved`).
constexpr bool is_pausing(waiter_state s)
{
    return s == waiter_state::pausing || s == waiter_state::pause_moved;
}

/// Woken by a release and not attempting yet. If it leaves now, the release would be lost on
/// the client's other waiters (its messages have been answered): its turn passes to the next
/// in line, woken the same way.
constexpr bool is_woken(waiter_state s)
{
    return s == waiter_state::woken_by_hand_off || s == waiter_state::woken_by_release_message;
}

/// A fair waiter waiting for its turn, or told of it: messages that do not name it do not
/// reach it, and it takes no turn of the client's other waiters.
constexpr bool waits_for_its_turn(waiter_state s)
{
    return s == waiter_state::queued || s == waiter_state::woken_as_head;
}

/// Right after its pause (or the skip of it): the attempt it goes on to was prompted by a
/// node's release message, which the other clients' waiters heard as well, so it first waits
/// a random moment (`release_wake_spread`).
constexpr bool follows_release_message(waiter_state s)
{
    return s == waiter_state::woken_by_release_message || s == waiter_state::retrying_at_once;
}

}  // namespace redlock::detail
