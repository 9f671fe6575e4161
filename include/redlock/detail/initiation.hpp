// SPDX-License-Identifier: BSL-1.0
#pragma once

// How the public templates hand an operation to the compiled library: the completion
// handler is type-erased once, so users compile none of the Redis and quorum logic.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <type_traits>

namespace redlock {
class guard;
}

namespace redlock::detail {

class client_impl;
struct mutex_state;
struct lock_state;

using error_code = boost::system::error_code;
using guard_handler = boost::asio::any_completion_handler<void(error_code, guard)>;
using void_handler = boost::asio::any_completion_handler<void(error_code)>;
using bool_handler = boost::asio::any_completion_handler<void(error_code, bool)>;

void initiate_acquire(std::shared_ptr<mutex_state> m, bool single_attempt, guard_handler h);

// Every lock kind's acquire and try_acquire: the token's completion `void(error_code, guard)`
// (guard is complete where this is instantiated), the lock's state and whether it is a single
// attempt.
template <class CompletionToken>
auto async_acquire(std::type_identity_t<CompletionToken>& token,
                   const std::shared_ptr<mutex_state>& state, bool single_attempt)
{
    return boost::asio::async_initiate<CompletionToken, void(error_code, guard)>(
        [](auto handler, const std::shared_ptr<mutex_state>& s, bool once) {
            initiate_acquire(s, once, std::move(handler));
        },
        token, state, single_attempt);
}
// A guard's operations. `ex` is the guard's executor: where they complete when `l` is null (a
// guard that owns nothing) and the handler has no executor of its own.
void initiate_release(std::shared_ptr<lock_state> l, const boost::asio::any_io_executor& ex,
                      void_handler h);
void initiate_extend(std::shared_ptr<lock_state> l, const boost::asio::any_io_executor& ex,
                     void_handler h);
void initiate_valid(std::shared_ptr<lock_state> l, const boost::asio::any_io_executor& ex,
                    bool_handler h);
void initiate_wait_lost(std::shared_ptr<lock_state> l, const boost::asio::any_io_executor& ex,
                        void_handler h);
void initiate_shutdown(std::shared_ptr<client_impl> c, void_handler h);

}  // namespace redlock::detail
