#pragma once

// The node layer: one pipelined connection to one Redis server, shared by every lock of a
// client. All members run on the client's strand.

#include <redlock/config.hpp>
#include <redlock/node.hpp>
#include <redlock/observability.hpp>

#include "detail/resp.hpp"
#include "detail/stream.hpp"
#include "detail/validity.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>

namespace redlock::detail {

/// A command as it goes on the wire, and for EVALSHA the EVAL to send instead when the
/// server answers NOSCRIPT (its script cache was flushed, or it restarted).
struct command
{
    std::string payload;
    std::string fallback;
};

/// What one request to one node came to.
struct exec_result
{
    enum class status { replied, timed_out, failed, cancelled };
    status state = status::failed;
    resp::reply reply;
    /// For timed_out and failed: what happened, for the per-node report.
    std::string detail;
};

struct connection_settings
{
    std::chrono::milliseconds connect_timeout{1000};
    std::chrono::milliseconds backoff_min{50};
    std::chrono::milliseconds backoff_max{2000};
    log_hook log;
    /// For `rediss://` nodes; null when no node uses TLS.
    std::shared_ptr<boost::asio::ssl::context> tls;
    bool verify_name = true;
};

/// The settings of `cfg` for its connections. Throws `system_error` (invalid_argument) when
/// a node uses TLS and the certificates in `cfg.tls` cannot be loaded.
connection_settings make_connection_settings(const redlock::config& cfg);

class connection : public std::enable_shared_from_this<connection>
{
  public:
    connection(boost::asio::any_io_executor strand, node endpoint, connection_settings settings);
    ~connection();

    /// The node as reports name it.
    const std::string& name() const noexcept { return name_; }

    /// Sends `cmd` and waits for its reply until `deadline`, or until the awaiting
    /// coroutine is cancelled. A request that is given up on stays in the pipeline so that
    /// its reply is read and dropped, never matched to a later request. Connects on demand.
    /// Must be awaited on the strand.
    boost::asio::awaitable<exec_result> execute(command cmd, clock::time_point deadline);

    /// Fails every pending request with `why` and refuses new ones.
    void close(const std::string& why);

    /// The counters so far; safe from any thread.
    node_counters counters() const;

  private:
    struct request;
    using request_ptr = std::shared_ptr<request>;
    enum class state { disconnected, connecting, connected, closed };

    boost::asio::awaitable<exec_result> exchange(command cmd, clock::time_point deadline);
    void start_connect();
    boost::asio::awaitable<void> connect_loop(std::uint64_t generation);
    void start_writer();
    boost::asio::awaitable<void> write_loop(std::uint64_t generation);
    void start_reader();
    boost::asio::awaitable<void> read_loop(std::uint64_t generation);
    void deliver(resp::reply reply);
    void complete(const request_ptr& r, exec_result::status s, std::string detail);
    void abandon(const request_ptr& r);
    void fail_connection(const std::string& why);

    boost::asio::any_io_executor strand_;
    node endpoint_;
    std::string name_;
    connection_settings settings_;
    stream socket_;
    state state_ = state::disconnected;
    // Bumped whenever a socket is given up, so that loops of an older socket stop.
    std::uint64_t generation_ = 0;
    bool writing_ = false;
    bool reading_ = false;
    std::deque<request_ptr> write_queue_;
    std::deque<request_ptr> in_flight_;
    resp::decoder decoder_;
    std::string last_error_;
    bool connected_before_ = false;
    struct
    {
        std::atomic<std::uint64_t> requests{0}, replies{0}, errors{0}, timeouts{0}, abandoned{0},
            reconnects{0};
        std::atomic<std::int64_t> latency_us{0};
    } stats_;
    void log(log_level level, const std::string& message) const;
    clock::time_point retry_at_{};
    std::chrono::milliseconds backoff_;
};

}  // namespace redlock::detail
