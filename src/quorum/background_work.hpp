// SPDX-License-Identifier: BSL-1.0
#pragma once

// The work of a client that no caller awaits: releases that guard destructors scheduled, and
// the requests that a release or a clean-up still had in flight when it completed (it
// completes once its outcome is decided, not when the last node answers).
// `client::async_shutdown` waits until there is none left.

#include "core/clock.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstddef>

namespace redlock::detail {

class background_work
{
  public:
    explicit background_work(const boost::asio::any_io_executor& strand)
        : drained_(strand, clock::time_point::max())
    {
    }

    /// A piece of work begins. From any thread (a guard's destructor counts its release
    /// before handing it to the strand).
    void begin() noexcept { ++pending_; }
    /// A piece of work ended. On the strand.
    void end()
    {
        if (--pending_ == 0) {
            drained_.cancel();
        }
    }
    std::size_t pending() const noexcept { return pending_; }

    /// Completes once nothing is pending, or when the awaiting coroutine is cancelled. On the
    /// strand.
    boost::asio::awaitable<void> drained()
    {
        auto cs = co_await boost::asio::this_coro::cancellation_state;
        while (pending_ > 0 && cs.cancelled() == boost::asio::cancellation_type::none) {
            co_await drained_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
        }
    }

  private:
    std::atomic<std::size_t> pending_{0};
    // Never expires: cancelled whenever the count drops to zero.
    boost::asio::steady_timer drained_;
};

}  // namespace redlock::detail
