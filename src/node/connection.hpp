// SPDX-License-Identifier: BSL-1.0
#pragma once

// The node layer: one pipelined connection to one Redis server (or to the master a set of
// Sentinels names), shared by every lock of a client. All members run on the client's strand.
//
// A connection is the engine put to work (src/engine): a `connection_fsm` decides when to
// connect and when to refuse, a `multiplexer` what to write and whose reply comes next, a
// `runner` moves the bytes. What is left here is what the node layer adds: counters, the
// log, and the failures in words.

#include <redlock/config.hpp>
#include <redlock/node.hpp>
#include <redlock/observability.hpp>

#include "core/clock.hpp"
#include "core/node_error.hpp"
#include "engine/connection_fsm.hpp"
#include "engine/multiplexer.hpp"
#include "engine/runner.hpp"
#include "net/stream.hpp"
#include "node/node_link.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace redlock::detail {

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

/// A link to one Redis server: requests are written in order on one socket, their replies
/// matched in order.
class connection final : public node_link,
                         public socket_user,
                         public std::enable_shared_from_this<connection>
{
  public:
    /// For a Sentinel node, `endpoint` names its Sentinels: each socket goes to the master
    /// they name at the time (`open_node`).
    connection(boost::asio::any_io_executor strand, node endpoint, connection_settings settings);

    /// Writes at once, or, while a write is under way, with everything queued meanwhile in
    /// the next one. While the server is silent (`multiplexer::went_silent`), the request is
    /// not sent: its owner is told at once that the node is not answering.
    void submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                const command& cmd) override;

    /// Counted. When `timed_out`, at the end of the strand's current turn, unless the server
    /// answered meanwhile: it is silent (nothing new is sent to it until it answers), and
    /// when every request in flight has been given up too, stuck: the socket is closed.
    void gave_up(const request_owner& owner, std::uint32_t index, bool timed_out) override;

    void hold_writes() noexcept override { mux_.hold_writes(); }
    void resume_writes() override;

    void close(const std::string& why) override;

    const std::string& name() const noexcept override { return name_; }
    node_counters counters() const override;

    /// The server the last socket reached ("host:port"): for a Sentinel node, the master the
    /// Sentinels named then.
    const std::string& reached() const noexcept { return reached_; }
    /// Gives up the socket (or the attempt under way, which may reach the old server) unless
    /// it is to `server`, failing its requests with `why`; the next request connects at once,
    /// without a back-off. For a Sentinel node whose master moved.
    void leave_unless_at(std::string_view server, const node_failure& why);
    /// The same, whatever the socket reached: its server is no longer the master.
    void leave(const node_failure& why);

    // socket_user: what the runner reads.
    void on_reply(reader_action& step) override;
    void on_failure(const socket_failure& failure) override;

  private:
    // How a socket ends, which decides the back-off after it.
    enum class ending { failed, stuck, left_master, closed };

    void refuse(request_owner& owner, std::uint32_t index, clock::time_point now);
    void start_connect();
    boost::asio::awaitable<void> connect(std::uint64_t generation);
    void attach(stream fresh, std::string reached);
    boost::asio::awaitable<node_failure> answers_ping(stream& fresh);
    void check_silence_soon();
    void check_silence(std::uint64_t generation, std::uint64_t mark);
    void end_socket(const node_failure& why, ending how);
    void warn_if_misconfigured(const request_owner& owner, const resp::reply& own);
    node_failure describe(const socket_failure& failure) const;
    void log(log_level level, const std::string& message) const;

    boost::asio::any_io_executor strand_;
    node endpoint_;
    std::string name_;
    connection_settings settings_;
    connection_fsm fsm_;
    multiplexer mux_;
    runner runner_;
    node_failure last_failure_;
    // The server the last connect reached ("host:port").
    std::string reached_;
    bool silence_check_posted_ = false;
    // A reply saying the node is misconfigured was logged (see warn_if_misconfigured).
    bool warned_misconfigured_ = false;
    struct
    {
        std::atomic<std::uint64_t> requests{0}, replies{0}, errors{0}, timeouts{0}, abandoned{0},
            reconnects{0};
        std::atomic<std::int64_t> latency_us{0};
    } stats_;
};

}  // namespace redlock::detail
