// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// A distributed counting semaphore: at most `permits` holders at once.

#include <redlock/detail/access.hpp>
#include <redlock/detail/initiation.hpp>
#include <redlock/guard.hpp>
#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace redlock {

/// A named semaphore of `permits()` permits with its options, made by
/// `client::make_semaphore`. Cheap to copy (copies share their state); it holds no permit
/// itself: `acquire` returns a `guard` that holds one, which `guard::release` gives back and
/// which `guard::extend`, `guard::valid`, the watchdog (`options::auto_extend`) and
/// `with_lock` treat as they treat a mutex's lock. A holder that dies gives its permit back
/// when its expiry passes, measured by each node's own clock.
///
/// Each permit is an entry of its own, owned by the guard's random value: on each node a
/// sorted set under the semaphore's name holds the live permits with their expiries, and
/// the limit is kept beside it (both in the name's Redis Cluster slot). An acquisition needs
/// `quorum()` nodes to grant it, at least a majority and often more once there are several
/// permits: see docs/safety.md for why, and for what it costs.
class semaphore
{
  public:
    /// The executor type of the client that made it.
    using executor_type = boost::asio::any_io_executor;
    /// The executor of the client that made it: where completions without an executor of
    /// their own run.
    executor_type get_executor() const noexcept;

    /// The semaphore's name as given to `make_semaphore` (its Redis key unless
    /// `config::key_prefix` is set).
    const std::string& name() const noexcept;
    /// How many holders it admits at once.
    std::ptrdiff_t permits() const noexcept;
    /// The number of nodes that must grant a permit: with N nodes and L permits, the least Q
    /// with (L + 1) * Q > N * L, that is floor(N * L / (L + 1)) + 1 (a majority for one
    /// permit, every node once L >= N - 1).
    std::size_t quorum() const noexcept;
    /// The options the semaphore was made with.
    const redlock::options& options() const noexcept;
    /// The per-node outcomes of the last acquisition attempt on this semaphore that
    /// completed (from any copy). Thread-safe.
    report last_report() const;

    /// Takes one permit: up to `options::tries` attempts (and no longer than
    /// `options::wait`), with `options::retry_delay` between them, woken early when a holder
    /// releases. Each attempt asks every node at once; a node grants when fewer than
    /// `permits()` live holders are there; the attempt succeeds when `quorum()` nodes granted
    /// with validity left, and is deleted on every node otherwise.
    ///
    /// Completion signature `void(error_code, guard)`: success with an owning guard;
    /// `error::taken` when the last attempt found so many nodes full that no quorum was
    /// possible; `error::failed` when it found no quorum otherwise;
    /// `error::invalid_argument` at once (after the attempt's clean-up) when a node's holders
    /// use another number of permits (the node's outcome, `node_errc::permits_mismatch`,
    /// names both numbers); `error::misconfigured` and `error::shut_down` as for
    /// `mutex::async_acquire`. On failure the guard owns nothing but carries the report.
    ///
    /// Cancellation: terminal, partial and total, as `mutex::async_acquire`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, state_, false);
    }
    /// `async_acquire(asio::deferred)`: a lazy operation to `co_await` or compose.
    auto acquire() { return async_acquire(boost::asio::deferred); }

    /// Exactly one attempt, otherwise as `async_acquire`; `error::taken` when the semaphore
    /// is full on so many nodes that no quorum is possible.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {})
    {
        return detail::async_acquire<CompletionToken>(token, state_, true);
    }
    /// `async_try_acquire(asio::deferred)`.
    auto try_acquire() { return async_try_acquire(boost::asio::deferred); }

  private:
    friend struct detail::access;
    explicit semaphore(std::shared_ptr<detail::mutex_state> state) noexcept
        : state_(std::move(state))
    {
    }

    std::shared_ptr<detail::mutex_state> state_;
};

}  // namespace redlock
