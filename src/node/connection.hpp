// SPDX-License-Identifier: BSL-1.0
#pragma once

// The node layer: one pipelined connection to one Redis server (or to the master a set of
// Sentinels names), shared by every lock of a client. All members run on the client's strand.

#include <redlock/config.hpp>
#include <redlock/node.hpp>
#include <redlock/observability.hpp>

#include "core/clock.hpp"
#include "net/stream.hpp"
#include "node/node_link.hpp"
#include "resp/resp.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
    /// The connection is to a server of a Redis Cluster, whose redirections are followed.
    bool cluster_server = false;
};

/// The settings of `cfg` for its connections. Throws `system_error` (invalid_argument) when
/// a node uses TLS and the certificates in `cfg.tls` cannot be loaded.
connection_settings make_connection_settings(const redlock::config& cfg);

class sentinel_watch;

/// A link to one Redis server: requests are written in order on one socket, their replies
/// matched in order.
class connection final : public node_link, public std::enable_shared_from_this<connection>
{
  public:
    connection(boost::asio::any_io_executor strand, node endpoint, connection_settings settings);
    ~connection() override;

    const std::string& name() const noexcept override { return name_; }

    /// Writes at once, or, while a write is under way, with everything queued meanwhile in
    /// the next one.
    void submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                const command& cmd) override;

    /// Counted; when `timed_out` and every request in flight has been given up, the server
    /// is considered stuck and the socket is closed, at the end of the strand's current turn
    /// unless a request that is wanted was queued meanwhile.
    void gave_up(const request_owner& owner, std::uint32_t index, bool timed_out) override;

    void hold_writes() noexcept override { ++writes_held_; }
    void resume_writes() override;

    void close(const std::string& why) override;

    /// For a Sentinel node: the Sentinels announced `master` as the node's master. Unless
    /// that is the server connected to, the socket is given up (its requests fail) and the
    /// next request connects again at once. On the strand only.
    void master_switched(const server_address& master);

    node_counters counters() const override;

  private:
    struct entry
    {
        std::shared_ptr<request_owner> owner;
        const command* cmd = nullptr;
        clock::time_point sent{};
        std::uint32_t index = 0;
        /// Sends `cmd->fallback` (after a NOSCRIPT) rather than the payload.
        bool fallback = false;
        /// The replies so far of a command with several (`command::replies`).
        std::vector<resp::reply> gathered{};
        /// Its owner was told at once that the server is not answering (see `unresponsive_`).
        bool told = false;
        bool given_up() const noexcept { return told || owner->given_up(index); }
    };
    /// A socket's I/O buffers: a fresh pair per connection, held by the handlers of its
    /// reads and writes.
    struct buffers;
    enum class state { disconnected, connecting, connected, closed };

    void start_connect();
    boost::asio::awaitable<void> connect_loop(std::uint64_t generation);
    void write_batch();
    void start_reader();
    void read_more();
    void on_read(std::uint64_t generation, const boost::system::error_code& ec, std::size_t n);
    void deliver(resp::reply reply);
    void complete(entry& e, exec_result result);
    void fail_connection(const std::string& why);
    // For a Sentinel node whose server is no longer its master: fails the socket's requests
    // with `why`, and the next request asks the Sentinels again at once.
    void leave_old_master(const std::string& why);
    bool looks_stuck();
    boost::asio::awaitable<std::string> answers_ping(stream& fresh);
    void warn_if_misconfigured(std::string_view reply_text);

    boost::asio::any_io_executor strand_;
    node endpoint_;
    std::string name_;
    connection_settings settings_;
    stream socket_;
    std::shared_ptr<buffers> buffers_;
    state state_ = state::disconnected;
    // Bumped whenever a socket is given up, so that loops of an older socket stop.
    std::uint64_t generation_ = 0;
    /// Requests queued or in flight that their owners gave up.
    std::size_t given_up_ = 0;
    /// How many requests at the front of `in_flight_` are known to be given up.
    std::size_t given_up_prefix_ = 0;
    bool writing_ = false;
    bool stuck_check_posted_ = false;
    /// The scripts (`command::script`) sent as EVAL on this socket.
    std::vector<const void*> scripts_sent_;
    unsigned writes_held_ = 0;
    bool reading_ = false;
    std::deque<entry> write_queue_;
    std::deque<entry> in_flight_;
    resp::decoder decoder_;
    std::string last_error_;
    bool connected_before_ = false;
    // No reply has come on the current socket yet (see broken_off).
    bool silent_so_far_ = true;
    // The last socket was given up because the server answered nothing in flight: until a
    // new socket has answered a PING, requests fail at once instead of waiting for a server
    // that may still be stopped (its kernel accepts connections all the same).
    bool probing_ = false;
    // A request timed out unanswered, and nothing has been answered since: new requests are
    // written (in order) but their owners are told at once that the server is not answering.
    bool unresponsive_ = false;
    // A reply saying the node is misconfigured was logged (see warn_if_misconfigured).
    bool warned_misconfigured_ = false;
    // The server the last connect reached ("host:port"): a Sentinel node's master of the time.
    std::string reached_;
    // For a Sentinel node, once connected: the watch for failovers, stopped by `close`.
    std::shared_ptr<sentinel_watch> watch_;
    std::string broken_off(std::string_view what, const boost::system::error_code& ec) const;
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
