// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Lock events: what a service measures of its locks (waits, holds, extensions, losses).

#include <boost/system/error_code.hpp>

#include <chrono>
#include <functional>
#include <string_view>

namespace redlock {

/// What happened to a lock (`lock_event::kind`). A guard that was granted has one
/// `acquired`, then any number of `extended` and `extend_failed`, then exactly one of
/// `released` or `lost`.
enum class lock_event_kind {
    /// An acquire (or a campaign) was granted: `elapsed` from its start to the grant,
    /// `attempts` made.
    acquired,
    /// An acquire completed without the lock: `error` is its error (`error::taken`,
    /// `error::failed`, `error::misconfigured`, `operation_aborted`, ...), with `elapsed` and
    /// `attempts`.
    acquire_failed,
    /// A held lock's release began (by `guard::async_release` or the guard's destructor):
    /// `elapsed` is the time held, from the grant to the release's start.
    released,
    /// An extension held (the guard's own or the watchdog's): `elapsed` is the time it took.
    extended,
    /// An extension of a held lock failed: `error` says why, `elapsed` is the time it took.
    extend_failed,
    /// The lock was found lost: `elapsed` is the time held until then. No `released` follows.
    lost,
};

/// "acquired", "acquire_failed", "released", "extended", "extend_failed" or "lost".
std::string_view to_string(lock_event_kind kind) noexcept;

/// One lock event, as `config::observer` receives it. The views live for the call only:
/// copy what you keep.
struct lock_event
{
    /// What happened (see `lock_event_kind` for what the other fields then hold).
    lock_event_kind kind = lock_event_kind::acquired;
    /// The kind of lock: "mutex", "fair", "read", "write", "semaphore" or "election".
    std::string_view type;
    /// The lock's name as it was made (`mutex::name()`).
    std::string_view name;
    /// What `kind` says it measures; zero where it measures nothing.
    std::chrono::nanoseconds elapsed{0};
    /// Attempts an acquire made (`acquired`, `acquire_failed`); 1 for an extension.
    int attempts = 0;
    /// The error of `acquire_failed` and `extend_failed`; clear otherwise.
    boost::system::error_code error{};
};

/// Receives a client's lock events (`config::observer`). Called on the client's strand: keep
/// it quick, and never block in it. An exception out of it is dropped.
using lock_observer = std::function<void(const lock_event&)>;

}  // namespace redlock
