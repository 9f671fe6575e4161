// SPDX-License-Identifier: BSL-1.0
#pragma once

// The strand a client's work runs on.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

namespace redlock::detail {

/// A strand over `ex`. When `ex` is an io_context's or a thread_pool's plain executor the
/// strand is built over that concrete type rather than over the type-erased executor: such a
/// strand fits `any_io_executor`'s small-object buffer, so copying it (every co_spawn, timer
/// and socket does) and the prefer/require calls Asio makes on it do not allocate. The
/// behaviour is the same: a strand over the same underlying executor.
inline boost::asio::any_io_executor make_client_strand(const boost::asio::any_io_executor& ex)
{
    if (const auto* io = ex.target<boost::asio::io_context::executor_type>()) {
        return boost::asio::make_strand(*io);
    }
    if (const auto* pool = ex.target<boost::asio::thread_pool::executor_type>()) {
        return boost::asio::make_strand(*pool);
    }
    return boost::asio::make_strand(ex);
}

}  // namespace redlock::detail
