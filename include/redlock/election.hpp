// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Leader election over the client's nodes: a fair mutex whose holder publishes a value.

#include <redlock/detail/access.hpp>
#include <redlock/detail/initiation.hpp>
#include <redlock/guard.hpp>
#include <redlock/leader.hpp>
#include <redlock/mutex.hpp>
#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace redlock {

namespace detail {
using leader_handler =
    boost::asio::any_completion_handler<void(error_code, std::optional<redlock::leader>)>;
void initiate_campaign(std::shared_ptr<mutex_state> m, std::string value, guard_handler h);
void initiate_proclaim(std::shared_ptr<mutex_state> m, std::shared_ptr<lock_state> l,
                       std::string value, void_handler h);
void initiate_leader(std::shared_ptr<mutex_state> m, leader_handler h);
void initiate_observe(std::shared_ptr<mutex_state> m, std::optional<redlock::leader> last_seen,
                      leader_handler h);
}  // namespace detail

/// An election on one name, made by `client::make_election`: candidates campaign, and the one
/// that leads holds a fair mutex and publishes a value (where it can be reached, say) that
/// anyone can read and watch. Terms are the leaders' fencing tokens. Cheap to copy (copies
/// share their state).
///
/// Safety: at most one candidate leads at a time within its lock's validity, as for a mutex
/// (docs/safety.md); what a reader sees may lag a change by the round trips it takes to hear
/// of it, or by the lock's expiry when a leader crashed.
class election
{
  public:
    /// The executor type of the client that made it.
    using executor_type = boost::asio::any_io_executor;
    /// The executor of the client that made it: where completions without an executor of
    /// their own run.
    executor_type get_executor() const noexcept { return lock_.get_executor(); }
    /// The election's name as given to `make_election`.
    const std::string& name() const noexcept { return lock_.name(); }
    /// The options in use: those given, with `fair`, `fencing` and `auto_extend` on.
    const redlock::options& options() const noexcept { return lock_.options(); }
    /// The per-node outcomes of the last campaign attempt that completed. Thread-safe.
    report last_report() const { return lock_.last_report(); }

    /// Campaigns with `value` (any bytes, at most 64 KiB) until this candidate leads, in the
    /// order candidates began to campaign (the fair queue), then publishes `value` as the
    /// leader's and completes.
    ///
    /// Completion signature `void(error_code, guard)`: the guard is the leadership. Its
    /// release (or destructor) resigns; the watchdog keeps it; `guard::async_wait_lost` tells
    /// of its loss; `guard::fencing_token()` is its term. `error::failed` when
    /// `options::wait` passes first, or when the publication found no quorum (the leadership
    /// is resigned then); `error::invalid_argument` for a value over 64 KiB;
    /// `error::misconfigured`, `error::shut_down` as `mutex::async_acquire`.
    ///
    /// Cancellation: terminal, partial and total; the candidate leaves the queue at once and
    /// the operation completes with `operation_aborted`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_campaign(std::string value, CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, guard)>(
            [](auto handler, const std::shared_ptr<detail::mutex_state>& s, const std::string& v) {
                detail::initiate_campaign(s, v, std::move(handler));
            },
            token, state(), std::move(value));
    }
    /// `async_campaign(value, deferred)`: `co_await e.campaign(value)`.
    auto campaign(std::string value)
    {
        return async_campaign(std::move(value), boost::asio::deferred);
    }

    /// The leader `g` replaces its published value with `value`, keeping its term.
    ///
    /// Completion signature `void(error_code)`: `error::not_held` for a guard that does not
    /// lead this election (released, failed, or another lock's); `error::lost` once its loss
    /// was found (also when the publication found the lock gone from a majority);
    /// `error::failed` when fewer than a quorum of nodes confirmed it;
    /// `error::invalid_argument` for a value over 64 KiB.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_proclaim(const guard& g, std::string value, CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto handler, const std::shared_ptr<detail::mutex_state>& s,
               const std::shared_ptr<detail::lock_state>& l,
               const std::string& v) { detail::initiate_proclaim(s, l, v, std::move(handler)); },
            token, state(), detail::access::state_of(g), std::move(value));
    }
    /// `async_proclaim(g, value, deferred)`.
    auto proclaim(const guard& g, std::string value)
    {
        return async_proclaim(g, std::move(value), boost::asio::deferred);
    }

    /// Who leads: the leader that a quorum of nodes names now.
    ///
    /// Completion signature `void(error_code, std::optional<leader>)`: an empty optional when
    /// nobody leads (or the leadership lapsed); `error::failed` when fewer than a quorum of
    /// nodes answered. Any client may ask, campaigning or not. Cancellation: total.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_leader(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code,
                                                                 std::optional<redlock::leader>)>(
            [](auto handler, const std::shared_ptr<detail::mutex_state>& s) {
                detail::initiate_leader(s, std::move(handler));
            },
            token, state());
    }
    /// `async_leader(deferred)`.
    auto leader() { return async_leader(boost::asio::deferred); }

    /// Waits until the leader differs from `last_seen` (another term, a new value, or
    /// nobody), and completes at once if it already does.
    ///
    /// Completion signature `void(error_code, std::optional<leader>)`: the leader now. A
    /// resignation, a publication or a new leader is seen within a few round trips (each is
    /// announced on the nodes); a leader that crashed is seen gone once its lock expired.
    /// Nodes that do not answer are asked again after the retry delay. A loop of
    /// `seen = co_await e.observe(seen)` sees every leader that led for longer than a few
    /// round trips. Cancellation: terminal, partial and total (`operation_aborted`).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_observe(std::optional<redlock::leader> last_seen, CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code,
                                                                 std::optional<redlock::leader>)>(
            [](auto handler, const std::shared_ptr<detail::mutex_state>& s,
               const std::optional<redlock::leader>& seen) {
                detail::initiate_observe(s, seen, std::move(handler));
            },
            token, state(), std::move(last_seen));
    }
    /// `async_observe(last_seen, deferred)`.
    auto observe(std::optional<redlock::leader> last_seen)
    {
        return async_observe(std::move(last_seen), boost::asio::deferred);
    }

  private:
    friend struct detail::access;
    explicit election(std::shared_ptr<detail::mutex_state> state) noexcept
        : lock_(detail::access::make<mutex>(std::move(state)))
    {
    }
    const std::shared_ptr<detail::mutex_state>& state() const noexcept
    {
        return detail::access::state_of(lock_);
    }

    /// The fair mutex that leaders hold.
    mutex lock_;
};

}  // namespace redlock
