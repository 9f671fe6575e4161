// SPDX-License-Identifier: BSL-1.0
#pragma once

// Whom a node's release message wakes among one client's waiters of a key, by what each of
// them wants of the lock. Pure: the client's line of waiters (waiters.hpp) applies it.

#include "lock/waiter_state.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace redlock::detail {

/// What one release may let in, by the lock a waiter wants.
enum class wake_rule : std::uint8_t {
    /// One owner at a time (a mutex, a read-write lock's writer): a release lets one waiter
    /// in, so the client sends one contender per key and wakes nobody while it has one.
    one_owner,
    /// A reader of a read-write lock: readers hold it together, so a release that lets one
    /// reader in lets every reader in.
    shared,
    /// A permit of a semaphore: each release frees one permit, for one more waiter.
    one_permit,
};

/// What a release message does to one waiter of the line.
enum class release_effect : std::uint8_t {
    /// It is pausing and stays so.
    none,
    /// It is not pausing (a contender): it only sees the release (`waiter_event::release_seen`).
    seen,
    /// It is pausing and the release ends its pause (`waiter_event::release_message`).
    woken,
};

/// A waiter as the rule sees it.
struct line_member
{
    waiter_state state;
    wake_rule rule = wake_rule::one_owner;
};

/// What a release message does to each waiter of `line` (in the order they began to wait).
/// Every waiter that is not pausing sees it. Of the pausing ones, each rule decides for its
/// own waiters:
/// - `one_owner`: the longest-waiting is woken, unless a waiter of one owner is not pausing
///   (the client has its contender already); waiters of other rules do not hold it back;
/// - `shared`: all are woken, since they may hold the lock together, unless a waiter of one
///   owner is in the line: a writer that waits keeps new readers out (its intent), so the
///   readers wait for its release;
/// - `one_permit`: the longest-waiting is woken, unless a contender that had not heard of a
///   release yet (`attempting`) takes this one; contenders that are already retrying for an
///   earlier release leave this permit to it.
std::vector<release_effect> release_effects(std::span<const line_member> line);

}  // namespace redlock::detail
