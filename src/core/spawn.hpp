// SPDX-License-Identifier: BSL-1.0
#pragma once

// How a public operation's coroutine is started: on the library's strand, completing the
// user's type-erased handler with the tuple the coroutine returns.

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/errc.hpp>
#include <boost/system/error_code.hpp>

#include <exception>
#include <tuple>
#include <utility>

namespace redlock::detail {

// Completes a type-erased handler with the tuple a coroutine returned. co_spawn already
// dispatches to the handler's executor and never completes inline; this only unpacks.
template <class... Ts>
class finish
{
  public:
    using handler_type =
        boost::asio::any_completion_handler<void(boost::system::error_code, Ts...)>;
    using executor_type = boost::asio::any_completion_executor;

    finish(handler_type h, const boost::asio::any_io_executor& fallback)
        : executor_(boost::asio::get_associated_executor(h, fallback)), handler_(std::move(h))
    {
    }

    executor_type get_executor() const noexcept { return executor_; }

    void operator()(const std::exception_ptr& e,
                    std::tuple<boost::system::error_code, Ts...> result)
    {
        if (e) {
            // The operations catch what they expect; anything else (bad_alloc) is reported,
            // not thrown out of the user's io_context::run.
            std::get<0>(result) = make_error_code(boost::system::errc::not_enough_memory);
        }
        std::apply([this](auto&&... args) { std::move(handler_)(std::move(args)...); },
                   std::move(result));
    }

  private:
    executor_type executor_;
    handler_type handler_;
};

/// Runs `op` on `strand`; its result goes to `h` on h's associated executor (`fallback` when
/// it has none), and h's cancellation slot reaches `op`.
template <class... Ts>
void spawn_operation(const boost::asio::any_io_executor& strand,
                     const boost::asio::any_io_executor& fallback,
                     boost::asio::awaitable<std::tuple<boost::system::error_code, Ts...>> op,
                     boost::asio::any_completion_handler<void(boost::system::error_code, Ts...)> h)
{
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    boost::asio::co_spawn(
        strand, std::move(op),
        boost::asio::bind_cancellation_slot(slot, finish<Ts...>(std::move(h), fallback)));
}

/// Every operation accepts terminal, partial and total cancellation, and checks for it
/// after each step instead of having co_await throw, so that it can still clean up.
inline boost::asio::awaitable<boost::asio::cancellation_state> accept_cancellation()
{
    namespace this_coro = boost::asio::this_coro;
    co_await this_coro::throw_if_cancelled(false);
    co_await this_coro::reset_cancellation_state(boost::asio::enable_total_cancellation());
    co_return co_await this_coro::cancellation_state;
}

inline bool cancelled(const boost::asio::cancellation_state& cs)
{
    return cs.cancelled() != boost::asio::cancellation_type::none;
}

}  // namespace redlock::detail
