// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// A distributed read-write lock: readers hold it together, a writer alone.

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

namespace redlock {

class client;

/// A named read-write lock with its options, made by `client::make_rw_mutex`. Cheap to copy
/// (copies share their state); it holds nothing itself: each acquisition returns a `guard`
/// (`guard::shared()` tells a reader's from the writer's), which `guard::release`,
/// `guard::extend`, `guard::valid`, the watchdog (`options::auto_extend`) and `with_lock`
/// treat as they treat a mutex's lock.
///
/// On each node the lock is one hash under its name (so one Redis Cluster slot) with an entry
/// per holder: each reader's, the writer's, and the intent of a writer that waits. Each entry
/// expires on its own, measured by the node's clock, so a holder that died blocks the others
/// no longer than its own expiry. Readers and writers each need a majority of the nodes, so a
/// writer's quorum meets every other holder's on some node, which refuses the later of them.
///
/// A writer that waits for readers to leave records its intent, which keeps new readers out
/// (their acquisitions are refused as if a writer held the lock) until the writer got the
/// lock or gave up: writers are not starved by a stream of readers.
class rw_mutex
{
  public:
    /// The executor type of the client that made it.
    using executor_type = boost::asio::any_io_executor;
    /// The executor of the client that made it: where completions without an executor of
    /// their own run.
    executor_type get_executor() const noexcept;

    /// The lock's name as given to `make_rw_mutex` (its Redis key unless
    /// `config::key_prefix` is set).
    const std::string& name() const noexcept;
    /// The options it was made with.
    const redlock::options& options() const noexcept;
    /// The per-node outcomes of the last exclusive (`shared` false) or shared acquisition
    /// attempt on this lock that completed (from any copy). Thread-safe.
    report last_report(bool shared = false) const;

    /// Exclusive (a writer): up to `options::tries` attempts (and no longer than
    /// `options::wait`), with `options::retry_delay` between them, woken early when a holder
    /// releases. A node grants when no live reader and no other live writer is there; the
    /// attempt succeeds when a majority granted with validity left, and is deleted on every
    /// node otherwise. While readers refuse it, the writer's intent on those nodes keeps new
    /// readers out; the intent goes when the writer gets the lock, gives up or is cancelled,
    /// and expires soon after the writer if it dies.
    ///
    /// Completion signature `void(error_code, guard)`: success with an owning guard (with
    /// `options::fencing`, its `fencing_token()`); `error::taken` when the last attempt found
    /// readers or another writer on a majority; `error::failed`, `error::misconfigured` and
    /// `error::shut_down` as for `mutex::async_acquire`. On failure the guard owns nothing but
    /// carries the report.
    ///
    /// Cancellation: terminal, partial and total, as `mutex::async_acquire`; the cancelled
    /// writer's entry and intent are deleted everywhere.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, exclusive_, false);
    }
    /// `async_acquire(asio::deferred)`: a lazy operation to `co_await` or compose.
    auto acquire() { return async_acquire(boost::asio::deferred); }

    /// Exclusive, exactly one attempt (which records no intent), otherwise as `async_acquire`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, exclusive_, true);
    }
    /// `async_try_acquire(asio::deferred)`.
    auto try_acquire() { return async_try_acquire(boost::asio::deferred); }

    /// Shared (a reader): as `async_acquire`, but a node grants when no live writer and no
    /// live intent of a waiting writer is there, whatever readers hold it. The guard's
    /// `shared()` is true; it has no fencing token. `error::taken` when the last attempt found
    /// a writer, or a writer waiting, on a majority.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_shared(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, shared_, false);
    }
    /// `async_acquire_shared(asio::deferred)`.
    auto acquire_shared() { return async_acquire_shared(boost::asio::deferred); }

    /// Shared, exactly one attempt, otherwise as `async_acquire_shared`: `error::taken` while
    /// a writer holds the lock or waits for it on a majority.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire_shared(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, shared_, true);
    }
    /// `async_try_acquire_shared(asio::deferred)`.
    auto try_acquire_shared() { return async_try_acquire_shared(boost::asio::deferred); }

  private:
    friend class client;
    rw_mutex(std::shared_ptr<detail::mutex_state> exclusive,
             std::shared_ptr<detail::mutex_state> shared) noexcept
        : exclusive_(std::move(exclusive)), shared_(std::move(shared))
    {
    }

    /// The writers' and the readers' state: one lock, seen in each mode.
    std::shared_ptr<detail::mutex_state> exclusive_;
    std::shared_ptr<detail::mutex_state> shared_;
};

}  // namespace redlock
