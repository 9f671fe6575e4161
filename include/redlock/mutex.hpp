// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// A named distributed lock.

#include <redlock/detail/access.hpp>
#include <redlock/detail/initiation.hpp>
#include <redlock/guard.hpp>
#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace redlock {

/// A named lock with its options, made by `client::make_mutex`. Cheap to copy (copies
/// share their state); it does not hold the lock itself: `acquire` returns a `guard` that
/// does. Any number of acquisitions may run on one mutex at once, each with its own owner
/// value unless `options::value` fixes one.
class mutex
{
  public:
    /// The executor type of the client that made it.
    using executor_type = boost::asio::any_io_executor;
    /// The executor of the client that made it: where completions without an executor of
    /// their own run.
    executor_type get_executor() const noexcept;

    /// The lock's name as given to `make_mutex` (its Redis key unless `config::key_prefix`
    /// is set), or for a multi-resource lock the names joined by ", ".
    const std::string& name() const noexcept;
    /// The Redis keys the lock sets: `config::key_prefix` followed by each name.
    const std::vector<std::string>& keys() const noexcept;
    /// The options the mutex was made with.
    const redlock::options& options() const noexcept;
    /// The per-node outcomes of the last acquisition attempt on this mutex that completed
    /// (from any copy). Thread-safe.
    report last_report() const;

    /// Lock: up to `options::tries` attempts (and no longer than `options::wait`), with
    /// `options::retry_delay` between them. Each attempt sends SET NX PX to every node at
    /// once and succeeds when a quorum set the key with validity left; a failed attempt
    /// deletes the key on every node before the next.
    ///
    /// Completion signature `void(error_code, guard)`: success with an owning guard;
    /// `error::taken` when the last attempt found another owner on a quorum;
    /// `error::failed` when it found no quorum otherwise; `error::misconfigured` at once
    /// (after the attempt's clean-up) when nodes failing in a way retrying cannot fix leave
    /// too few for a quorum; `error::shut_down` after `client::async_shutdown`. On failure
    /// the guard owns nothing but carries the report.
    ///
    /// Cancellation: terminal, partial and total. A cancelled acquire deletes whatever it
    /// set (bounded by the per-node deadline), then completes with `operation_aborted`.
    /// The handler runs on its associated executor, never inside this call. Nothing happens
    /// while nobody runs the client's executor: `async_acquire(asio::use_future).get()` on
    /// the thread that should run it waits forever (`redlock::blocking` runs one itself).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, state_, false);
    }
    /// `async_acquire(asio::deferred)`: a lazy operation to `co_await` or compose.
    auto acquire() { return async_acquire(boost::asio::deferred); }

    /// TryLock: exactly one attempt, otherwise as `async_acquire`; `error::taken` when
    /// another owner holds a quorum.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, state_, true);
    }
    /// `async_try_acquire(asio::deferred)`.
    auto try_acquire() { return async_try_acquire(boost::asio::deferred); }

  private:
    friend struct detail::access;
    explicit mutex(std::shared_ptr<detail::mutex_state> state) noexcept : state_(std::move(state))
    {
    }

    std::shared_ptr<detail::mutex_state> state_;
};

}  // namespace redlock
