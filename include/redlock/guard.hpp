// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// RAII ownership of an acquired lock.

#include <redlock/detail/access.hpp>
#include <redlock/detail/initiation.hpp>
#include <redlock/report.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace redlock {

/// Move-only ownership of an acquired lock, as `mutex::acquire` gives it.
///
/// Destroying (or move-assigning over) a guard that still owns its lock starts the release
/// on the client's executor, without blocking and without anything to await; the client
/// tracks it and `client::async_shutdown` waits for it. A moved-from guard does nothing.
///
/// A failed `acquire` also completes with a guard: it owns nothing, but its `last_report()`
/// says what each node answered.
///
/// Thread safety: distinct guards may be used concurrently; one guard must not be used by
/// two threads at once, and its accessors must not be called while one of its operations
/// is pending.
class guard
{
  public:
    /// A guard that owns nothing.
    guard() noexcept;
    /// Takes over the lock of `other`, which then owns nothing.
    guard(guard&& other) noexcept;
    /// Starts the release of the lock this guard owns, if any (as the destructor does), then
    /// takes over the lock of `other`, which then owns nothing.
    guard& operator=(guard&& other) noexcept;
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    ~guard();

    /// The executor type of the client that made it.
    using executor_type = boost::asio::any_io_executor;
    /// The executor of the client that made it, kept after a move: where completions
    /// without an executor of their own run. Empty for a default-constructed guard, whose
    /// operations complete on the handler's associated executor (give a plain callback one
    /// with `asio::bind_executor`, or it runs on a system thread).
    executor_type get_executor() const noexcept;

    /// The lock's name, as `mutex::name()`; empty for a default-constructed guard.
    const std::string& name() const noexcept;
    /// The random owner value stored under the key on each node.
    const std::string& value() const noexcept;
    /// The validity deadline: until then no other owner can hold a quorum (given bounded
    /// clock drift). Updated by a successful `extend`.
    std::chrono::steady_clock::time_point until() const noexcept;
    /// True from a successful acquire until release (or destruction). Says nothing about
    /// validity: compare `until()` with the clock, or ask `valid()`.
    bool owns_lock() const noexcept;
    /// `owns_lock()`.
    explicit operator bool() const noexcept { return owns_lock(); }
    /// What each node did in this guard's last operation (acquire, extend, valid, release,
    /// or the watchdog's extension). A copy: the watchdog may update it at any time.
    report last_report() const;
    /// With `options::fencing`: this acquisition's fencing token, greater than the token of
    /// every acquisition of the same keys that completed before this one began. Hand it to
    /// the protected resource with each request, so that it can refuse a paused or
    /// partitioned former owner (`redlock::fence`, `redlock::fenced_store`). Kept after
    /// release, for logs. 0 without fencing and for a failed acquisition.
    std::uint64_t fencing_token() const noexcept;
    /// True for a reader's guard of a `rw_mutex` (`rw_mutex::acquire_shared`): others may
    /// hold the lock shared at the same time. False otherwise.
    bool shared() const noexcept;
    /// True once the lock was found lost while held (see `lost_slot`). It stays owned in
    /// the sense that release still deletes whatever keys of ours remain.
    bool lost() const noexcept;

    /// A slot that is emitted (terminal) when the lock is lost: when an extension finds our
    /// value gone from a majority of nodes, or when the validity runs out without a
    /// confirmed extension. Bind the protected work to it
    /// (`asio::bind_cancellation_slot(g.lost_slot(), token)`) so that a lost lock stops the
    /// work instead of letting it run on unprotected. Asking for it starts watching the
    /// lock. The signal is emitted on the client's strand: bind operations that run on the
    /// client's executor from a single thread, or use `with_lock`, which handles threads.
    /// One slot per guard: binding a second operation replaces the first one's handler.
    boost::asio::cancellation_slot lost_slot();

    /// Waits until the lock is lost.
    ///
    /// Completion signature `void(error_code)`: `error::lost` when the lock was lost, `not_held`
    /// when it was released (or never owned) first, `shut_down` after `client::async_shutdown`,
    /// `operation_aborted` when cancelled (terminal, partial or total).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto handler, const std::shared_ptr<detail::lock_state>& s,
               const executor_type& ex) { detail::initiate_wait_lost(s, ex, std::move(handler)); },
            token, state_, executor_);
    }
    /// `async_wait_lost(asio::deferred)`.
    auto wait_lost() { return async_wait_lost(boost::asio::deferred); }

    /// Unlock: deletes the key on every node where it still holds our value.
    ///
    /// Completion signature `void(error_code)`: success when a quorum had our value,
    /// `error::not_held` otherwise (it expired or was taken over), `error::shut_down` when
    /// started after `client::async_shutdown` (nothing is sent; the keys expire by TTL),
    /// `operation_aborted` when cancelled (terminal or partial: the deletes already sent still
    /// run, keys not deleted expire by TTL; a total cancellation is not accepted, since a release
    /// cannot be taken back). The guard owns nothing afterwards, whatever the outcome. The
    /// handler runs on its associated executor, never inside this call.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_release(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto handler, const std::shared_ptr<detail::lock_state>& s,
               const executor_type& ex) { detail::initiate_release(s, ex, std::move(handler)); },
            token, state_, executor_);
    }
    /// `async_release(asio::deferred)`: a lazy operation to `co_await` or compose.
    auto release() { return async_release(boost::asio::deferred); }

    /// Extend: resets the TTL to `options::expiry` on every node where the key holds our
    /// value; needs a quorum within the validity, then moves `until()` forward.
    ///
    /// Completion signature `void(error_code)`: success, `error::expired` when the validity
    /// had already run out, `error::extend_failed` when no quorum extended in time or
    /// `options::auto_extend_limit` extensions were already made (counting the watchdog's),
    /// `error::lost` when the lock was already found lost (see `lost_slot`; nothing is sent,
    /// and the guard stays lost), `error::not_held` when the guard owns nothing,
    /// `error::shut_down` after `client::async_shutdown`, `operation_aborted` when cancelled
    /// (terminal or partial: some nodes may have extended the key's TTL, `until()` is
    /// unchanged; a total cancellation is not accepted).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_extend(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto handler, const std::shared_ptr<detail::lock_state>& s,
               const executor_type& ex) { detail::initiate_extend(s, ex, std::move(handler)); },
            token, state_, executor_);
    }
    /// `async_extend(asio::deferred)`.
    auto extend() { return async_extend(boost::asio::deferred); }

    /// Valid: does a quorum of nodes still hold our value?
    ///
    /// Completion signature `void(error_code, bool)`. Node failures count as "not held" and
    /// are in `last_report()`; the error is set only for `not_held` (the guard owns nothing)
    /// and cancellation (terminal, partial or total: it only reads).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_valid(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, bool)>(
            [](auto handler, const std::shared_ptr<detail::lock_state>& s,
               const executor_type& ex) { detail::initiate_valid(s, ex, std::move(handler)); },
            token, state_, executor_);
    }
    /// `async_valid(asio::deferred)`.
    auto valid() { return async_valid(boost::asio::deferred); }

  private:
    friend struct detail::access;
    explicit guard(std::shared_ptr<detail::lock_state> state) noexcept;
    void release_in_background() noexcept;

    std::shared_ptr<detail::lock_state> state_;
    // Kept by a moved-from guard, so that its operations still complete on the client's
    // executor.
    executor_type executor_;
};

}  // namespace redlock
