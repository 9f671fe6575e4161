// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Running a piece of work under a lock, cancelled when the lock is lost.

#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>
#include <redlock/rw_mutex.hpp>
#include <redlock/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <concepts>
#include <exception>
#include <type_traits>

namespace redlock {

namespace detail {
template <class A>
struct awaitable_value;
template <class T, class Executor>
struct awaitable_value<boost::asio::awaitable<T, Executor>>
{
    using type = T;
};

/// What `with_lock` takes: a lock whose `async_acquire` gives a `guard`.
template <class Lock>
concept guarded_lock =
    std::same_as<Lock, mutex> || std::same_as<Lock, semaphore> || std::same_as<Lock, rw_mutex>;
}  // namespace detail

/// Acquires `m` (a `mutex`, a permit of a `semaphore`, or a `rw_mutex` exclusively), runs
/// `work(guard&)` (a function returning `asio::awaitable<T>`, with T void or default-constructible)
/// while the lock is held, and releases it.
///
/// - Completes with the work's result, or rethrows the work's exception.
/// - When the lock is lost while the work runs (an extension finds it gone from a
///   majority, or its validity runs out unconfirmed), the work is cancelled (terminal
///   cancellation of its coroutine) and `with_lock` throws `boost::system::system_error`
///   with `error::lost`, even if the work ignores the cancellation and finishes.
/// - Acquisition failures throw as `mutex::acquire` does.
/// - Cancelling the awaiting coroutine cancels the acquire or the work.
///
/// For work that may outlast the expiry, make the mutex with `options::auto_extend`; without
/// it the lock is lost, and the work cancelled, when the validity runs out. The work runs on
/// the awaiting coroutine's executor.
template <detail::guarded_lock Lock, class Work>
auto with_lock(Lock m, Work work) -> boost::asio::awaitable<
    typename detail::awaitable_value<std::invoke_result_t<Work&, guard&>>::type>
{
    namespace asio = boost::asio;
    using result_type = typename detail::awaitable_value<std::invoke_result_t<Work&, guard&>>::type;

    guard g = co_await m.async_acquire(asio::use_awaitable);
    auto ex = co_await asio::this_coro::executor;
    // The work and a wait for loss race; whichever finishes first cancels the other.
    auto race = asio::experimental::make_parallel_group(asio::co_spawn(ex, work(g), asio::deferred),
                                                        g.async_wait_lost(asio::deferred));
    if constexpr (std::is_void_v<result_type>) {
        auto [order, failure, lost] =
            co_await race.async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        if (order[0] == 1 && lost == error::lost) {
            throw boost::system::system_error(make_error_code(error::lost));
        }
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        if (failure) {
            std::rethrow_exception(failure);
        }
    } else {
        auto [order, failure, value, lost] =
            co_await race.async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        if (order[0] == 1 && lost == error::lost) {
            throw boost::system::system_error(make_error_code(error::lost));
        }
        // A release that finds the keys gone changes nothing for work that completed while
        // the lock was watched: the keys expire anyway.
        co_await g.async_release(asio::as_tuple(asio::use_awaitable));
        if (failure) {
            std::rethrow_exception(failure);
        }
        co_return std::move(value);
    }
}

}  // namespace redlock
