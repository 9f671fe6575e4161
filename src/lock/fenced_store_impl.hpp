// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state behind a fenced_store: its connection to the one server, and the error its last
// request met.

#include <redlock/config.hpp>
#include <redlock/error.hpp>

#include "core/strand.hpp"
#include "node/connection.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace redlock::detail {

using access_result = std::tuple<error_code, std::optional<std::string>>;

class fenced_store_impl
{
  public:
    fenced_store_impl(const boost::asio::any_io_executor& ex, const redlock::config& cfg)
        : executor(ex),
          strand(make_client_strand(ex)),
          node(make_link(strand, cfg.nodes.front(), make_connection_settings(cfg)))
    {
    }

    boost::asio::any_io_executor executor;
    boost::asio::any_io_executor strand;
    std::shared_ptr<node_link> node;
    std::atomic<std::chrono::milliseconds::rep> timeout_ms{1000};

    // Runs the fenced_access script: a write of `value` or, without one, a read, which
    // answers the key's value (none when it has none).
    boost::asio::awaitable<access_result> run(std::string key, std::uint64_t token,
                                              std::string owner, std::optional<std::string> value);

    void note_error(std::string what)
    {
        std::lock_guard lock(error_mutex);
        last_error = std::move(what);
    }

    mutable std::mutex error_mutex;
    std::string last_error;  // guarded by error_mutex
};

}  // namespace redlock::detail
