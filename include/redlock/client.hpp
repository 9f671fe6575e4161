// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// The entry point: connections to the nodes, and the factory of mutexes.

#include <redlock/config.hpp>
#include <redlock/detail/access.hpp>
#include <redlock/detail/initiation.hpp>
#include <redlock/election.hpp>
#include <redlock/inspect.hpp>
#include <redlock/mutex.hpp>
#include <redlock/options.hpp>
#include <redlock/rw_mutex.hpp>
#include <redlock/semaphore.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace redlock {

namespace detail {
/// Each node's counters of the client behind `c`, as `client::node_counters` gives them.
std::vector<node_counters> node_counters_of(const client_impl& c);
}  // namespace detail

/// Owns one pipelined, multiplexed connection per node, shared by all its locks, and makes
/// mutexes. Connections open on first use and reconnect with backoff after failures.
///
/// All of the client's work runs on a strand of the executor it is given, so it may be
/// used from an io_context run by several threads. Destroying the client does not cancel
/// releases that guards scheduled; they finish in the background. Call `async_shutdown`
/// for an orderly end.
class client
{
  public:
    /// The executor the client's operations run on (through a strand of its own).
    using executor_type = boost::asio::any_io_executor;

    /// Throws `boost::system::system_error` with `error::invalid_argument` and a message
    /// naming the field when `cfg` is unusable (no nodes, a node twice, ...). No I/O.
    client(const executor_type& ex, config cfg);
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    /// Takes over the connections and state of `other`, which may then only be destroyed or
    /// assigned to.
    client(client&& other) noexcept = default;
    /// \copydoc client(client&&)
    client& operator=(client&& other) noexcept = default;
    ~client();

    /// The executor given to the constructor.
    executor_type get_executor() const noexcept;
    /// The configuration in use.
    const redlock::config& config() const noexcept;
    /// A snapshot of each node's counters, in config order. Thread-safe.
    std::vector<redlock::node_counters> node_counters() const;

    /// A lock named `name` (the Redis key) with `opts`. Throws `boost::system::system_error`
    /// with `error::invalid_argument` and a message naming the field when the name is
    /// empty or an option is out of range. No I/O.
    mutex make_mutex(std::string name, options opts);
    /// `make_mutex(name, options{})`. Overloads rather than default arguments (here and
    /// below): g++ 12 destroys a default argument's temporary twice when the call sits inside
    /// a `co_await` expression.
    mutex make_mutex(std::string name);

    /// A multi-resource lock over several keys: on each node all of them are set at once or
    /// none (a script), and one guard holds them all. Throws like `make_mutex`, also when
    /// `names` is empty or names a key twice.
    mutex make_multi_mutex(std::vector<std::string> names, options opts);
    /// `make_multi_mutex(names, options{})`.
    mutex make_multi_mutex(std::vector<std::string> names);

    /// A semaphore named `name` (the Redis key of its holders) of `permits` permits, with
    /// `opts`. Every client of one semaphore must give the same `permits`: an acquire that
    /// meets holders using another number completes with `error::invalid_argument`. Throws
    /// `boost::system::system_error` with `error::invalid_argument` and a message naming the
    /// field when `permits` is below 1, the name is empty, an option is out of range, or
    /// `opts` asks for what a permit cannot be (reentrant, fenced, recreated on extend). No I/O.
    semaphore make_semaphore(std::string name, std::ptrdiff_t permits, options opts);
    /// `make_semaphore(name, permits, options{})`.
    semaphore make_semaphore(std::string name, std::ptrdiff_t permits);

    /// A read-write lock named `name` (the Redis key of its holders) with `opts`. With
    /// `opts.fencing`, writers get fencing tokens (readers none). Throws
    /// `boost::system::system_error` with `error::invalid_argument` and a message naming the
    /// field when the name is empty, an option is out of range, or `opts` asks for what a
    /// read-write lock cannot be (reentrant, recreated on extend). No I/O.
    rw_mutex make_rw_mutex(std::string name, options opts);
    /// `make_rw_mutex(name, options{})`.
    rw_mutex make_rw_mutex(std::string name);

    /// An election on the lock named `name` with `opts` (a mutex's). For an election
    /// `fair`, `fencing` and `auto_extend` are on whether set or not, and `tries` is ignored:
    /// a campaign waits until it leads, is cancelled, or `opts.wait` (if set) passes. Throws
    /// `boost::system::system_error` with `error::invalid_argument` and a message naming the
    /// field for what an election cannot take (`reentrant`, a fixed `value`,
    /// `auto_extend_limit`) and as `make_mutex` does. No I/O.
    election make_election(std::string name, options opts);
    /// `make_election(name, options{})`.
    election make_election(std::string name);

    /// Reads what each node holds under the lock named `key` (the Redis key
    /// `config::key_prefix` + `key`), in one round trip per node (a read-only script):
    /// whether it exists, its owner value(s) and hold count, its remaining TTL.
    /// For tools and diagnostics; a lock's own state is `guard::async_valid`.
    ///
    /// Completion signature `void(error_code, std::vector<key_state>)`: one entry per node
    /// in config order, always; a node that fails or does not answer within `timeout` has
    /// its `error` set, and the operation still succeeds. `error::invalid_argument` for an
    /// empty key or a timeout that is not positive, `error::shut_down` after
    /// `async_shutdown`. Cancellation (terminal, partial or total: nothing changes on the
    /// nodes) completes with `operation_aborted` and the nodes read so far; the others
    /// have `error` set.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_inspect(std::string key, std::chrono::milliseconds timeout,
                       CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken,
                                           void(boost::system::error_code, std::vector<key_state>)>(
            [](auto handler, const std::shared_ptr<detail::client_impl>& c, const std::string& k,
               std::chrono::milliseconds t) {
                detail::initiate_inspect(c, k, t, std::move(handler));
            },
            token, impl_, std::move(key), timeout);
    }
    /// `async_inspect(key, timeout, asio::deferred)`.
    auto inspect(std::string key, std::chrono::milliseconds timeout)
    {
        return async_inspect(std::move(key), timeout, boost::asio::deferred);
    }

    /// Waits until every release that guard destructors scheduled has finished, then closes
    /// the connections; later operations complete with `error::shut_down`.
    ///
    /// Completion signature `void(error_code)`. Cancellation (terminal) stops the waiting
    /// and completes with `operation_aborted`; the connections are closed all the same.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_shutdown(CompletionToken&& token = {})
    {
        return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
            [](auto handler, const std::shared_ptr<detail::client_impl>& c) {
                detail::initiate_shutdown(c, std::move(handler));
            },
            token, impl_);
    }
    /// `async_shutdown(asio::deferred)`.
    auto shutdown() { return async_shutdown(boost::asio::deferred); }

  private:
    friend struct detail::access;
    std::shared_ptr<detail::client_impl> impl_;
};

}  // namespace redlock
