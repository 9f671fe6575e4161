// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// A fenced resource in Redis: keys whose reads and writes carry a fencing token, checked
/// by the server in the same script that reads or writes.

#include <redlock/config.hpp>
#include <redlock/guard.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redlock {

namespace detail {
class fenced_store_impl;
using read_handler = boost::asio::any_completion_handler<void(boost::system::error_code,
                                                              std::optional<std::string>)>;
using write_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;
void initiate_fenced_read(std::shared_ptr<fenced_store_impl> s, std::string key,
                          std::uint64_t token, std::string owner, read_handler h);
void initiate_fenced_write(std::shared_ptr<fenced_store_impl> s, std::string key, std::string value,
                           std::uint64_t token, std::string owner, write_handler h);
}  // namespace detail

/// Values kept in one Redis server (not one of the lock's nodes: the protected resource),
/// each under a key that also remembers the newest fencing token it has seen and that
/// token's owner. Every read and write runs as one script that applies `redlock::fence`'s
/// rule first, so a former owner that was paused or cut off past its lock's validity is
/// refused once a newer owner has touched the key, including in a read-modify-write.
///
/// Each key is a hash with the fields `value`, `token` and `owner`; write it only through
/// this class. One pipelined connection, opened on first use, reconnecting like a client's.
class fenced_store
{
  public:
    /// The executor the store's operations run on.
    using executor_type = boost::asio::any_io_executor;

    /// `cfg` must name exactly one node; its connection settings apply. Throws
    /// `boost::system::system_error` (`error::invalid_argument`) otherwise. No I/O.
    fenced_store(const executor_type& ex, const config& cfg);
    fenced_store(const fenced_store&) = delete;
    fenced_store& operator=(const fenced_store&) = delete;
    /// Takes over the connection of `other`, which may then only be destroyed or assigned to.
    fenced_store(fenced_store&& other) noexcept = default;
    /// \copydoc fenced_store(fenced_store&&)
    fenced_store& operator=(fenced_store&& other) noexcept = default;
    /// Closes the connection; pending operations complete with an error.
    ~fenced_store();

    /// The executor given to the constructor: where completions without an executor of
    /// their own run. Empty for a moved-from store.
    executor_type get_executor() const noexcept;

    /// The deadline of each request (default 1 s).
    void set_timeout(std::chrono::milliseconds timeout);

    /// Reads `key`'s value under `token` from `owner` (a guard's `fencing_token()` and
    /// `value()`).
    ///
    /// Completion signature `void(error_code, std::optional<std::string>)`: the value, or
    /// nullopt when the key has none yet; `error::stale_token` when the key has seen a newer
    /// token (or the same from another owner); `error::invalid_argument` for token 0;
    /// `error::failed` when the server could not be asked (unreachable, timed out, an
    /// error reply: see `last_error()`); `operation_aborted` when cancelled (terminal).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_read(std::string key, std::uint64_t token, std::string owner,
                    CompletionToken&& ct = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code,
                                                                 std::optional<std::string>)>(
            [](auto handler, const std::shared_ptr<detail::fenced_store_impl>& s, std::string k,
               std::uint64_t t, std::string o) {
                detail::read_handler h(std::move(handler));
                detail::initiate_fenced_read(s, std::move(k), t, std::move(o), std::move(h));
            },
            ct, impl_, std::move(key), token, std::move(owner));
    }
    /// `async_read(key, g.fencing_token(), g.value(), ct)`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_read(std::string key, const guard& g, CompletionToken&& ct = {})
    {
        return async_read(std::move(key), g.fencing_token(), g.value(),
                          std::forward<CompletionToken>(ct));
    }
    /// `async_read(key, token, owner, asio::deferred)`.
    auto read(std::string key, std::uint64_t token, std::string owner)
    {
        return async_read(std::move(key), token, std::move(owner), boost::asio::deferred);
    }
    /// `async_read(key, g, asio::deferred)`.
    auto read(std::string key, const guard& g)
    {
        return async_read(std::move(key), g, boost::asio::deferred);
    }

    /// Writes `value` to `key` under `token` from `owner`.
    ///
    /// Completion signature `void(error_code)`, with the errors of `async_read`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_write(std::string key, std::string value, std::uint64_t token, std::string owner,
                     CompletionToken&& ct = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto handler, const std::shared_ptr<detail::fenced_store_impl>& s, std::string k,
               std::string v, std::uint64_t t, std::string o) {
                detail::write_handler h(std::move(handler));
                detail::initiate_fenced_write(s, std::move(k), std::move(v), t, std::move(o),
                                              std::move(h));
            },
            ct, impl_, std::move(key), std::move(value), token, std::move(owner));
    }
    /// `async_write(key, value, g.fencing_token(), g.value(), ct)`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_write(std::string key, std::string value, const guard& g, CompletionToken&& ct = {})
    {
        return async_write(std::move(key), std::move(value), g.fencing_token(), g.value(),
                           std::forward<CompletionToken>(ct));
    }
    /// `async_write(key, value, token, owner, asio::deferred)`.
    auto write(std::string key, std::string value, std::uint64_t token, std::string owner)
    {
        return async_write(std::move(key), std::move(value), token, std::move(owner),
                           boost::asio::deferred);
    }
    /// `async_write(key, value, g, asio::deferred)`.
    auto write(std::string key, std::string value, const guard& g)
    {
        return async_write(std::move(key), std::move(value), g, boost::asio::deferred);
    }

    /// For people: what went wrong in the last operation that completed with
    /// `error::failed` (the server unreachable, no reply within the timeout, an error reply,
    /// with the server's name and words but never the password) or with
    /// `error::invalid_argument` (token 0); empty until one did.
    /// Safe to call from any thread, but not ordered with operations in flight: read it in the
    /// failed operation's completion. Decide on the error code, not on this text.
    std::string last_error() const;

  private:
    std::shared_ptr<detail::fenced_store_impl> impl_;
};

}  // namespace redlock
