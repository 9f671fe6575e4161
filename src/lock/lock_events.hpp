// SPDX-License-Identifier: BSL-1.0
#pragma once

// The lock events of `config::observer`. Each is made only when the client has an observer:
// without one no clock is read, no event is built and nothing is called for them, so the
// acquire and release paths cost what they did before events existed.

#include <redlock/lock_event.hpp>

#include "core/clock.hpp"

#include <boost/system/error_code.hpp>

namespace redlock::detail {

class client_impl;
struct mutex_state;
struct lock_state;

/// The client has an observer.
bool observed(const client_impl& c) noexcept;

/// Now, for a client with an observer; for one without, the epoch, unread (no event will
/// measure from it).
clock::time_point event_time(const client_impl& c) noexcept;

/// On the strand: tells the observer of `m`'s client of an event of `m`, with `elapsed`
/// from `since` to now. Nothing without an observer.
void emit(const mutex_state& m, lock_event_kind kind, clock::time_point since, int attempts,
          boost::system::error_code ec = {});

/// On the strand: `l` was granted now (its hold's measure starts here), `since` the
/// acquire's start, after `attempts` attempts.
void emit_acquired(lock_state& l, clock::time_point since, int attempts);

/// On the strand: `l`'s hold ended, `released` or `lost`. Only the first end of a hold is
/// told: a lost lock's release adds no `released`.
void emit_hold_end(lock_state& l, lock_event_kind kind);

/// On the strand: an extension of `l` that began at `since` completed with `ec` (clear: it
/// held). Not told once the hold has ended.
void emit_extension(const lock_state& l, clock::time_point since, boost::system::error_code ec);

}  // namespace redlock::detail
