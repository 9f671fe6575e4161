// SPDX-License-Identifier: BSL-1.0
#pragma once

// Nodes that are the master a set of Sentinels names (redis-sentinel://): finding that master
// on connect, and hearing of failovers. Part of the node layer: a connection and a subscriber
// open their streams through `open_node`; `sentinel_link` follows a failover.

#include <redlock/node.hpp>

#include "core/node_error.hpp"
#include "engine/multiplexer.hpp"
#include "engine/runner.hpp"
#include "net/stream.hpp"
#include "node/connection.hpp"
#include "resp/resp.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// Opens `s` to where `n`'s requests go, within `settings.connect_timeout` in all: `n`
/// itself (as `open_stream`), or for a Sentinel node the master its Sentinels name now, asked
/// in order, after which ROLE must say "master". `reached` gets the server's "host:port".
/// Returns what failed, its detail naming the node and the cause (never the password); no
/// failure on success.
boost::asio::awaitable<node_failure> open_node(stream& s, const node& n,
                                               const connection_settings& settings, bool select_db,
                                               std::string& reached);

/// The server at `a` as the Sentinel or cluster node `n` reaches it (its master, one of its
/// masters or seeds): `n`'s credentials, database and TLS, no Sentinels or seeds. Pure.
node node_at(const node& n, const server_address& a);

/// A Sentinel of the node `n` at `a`: `n`'s TLS, none of its credentials (Sentinels are asked
/// without a password). Pure.
node sentinel_server(const node& n, const server_address& a);

/// Reads a reply to `SENTINEL get-master-addr-by-name`: the master's address, or nullopt
/// with the reason in `why` (the Sentinel does not know the name: `no_master`; an error
/// reply; a malformed reply: `unexpected_reply`). Pure.
std::optional<server_address> read_master_address(const resp::reply& r, node_failure& why);

/// Reads a `+switch-master` message ("name old-host old-port new-host new-port"): the new
/// master's address when the message is about `master_name`. Pure.
std::optional<server_address> switched_master(std::string_view message,
                                              std::string_view master_name);

/// Listens for `+switch-master` on one of a Sentinel node's Sentinels (the next one after a
/// failure) and tells `on_switch` of each new master of the node, on the strand, until
/// `stop`. A pub/sub `multiplexer` and its `runner` carry the subscription. While it runs it
/// keeps a read pending: a client with a Sentinel node keeps its io_context busy until
/// `client::async_shutdown`.
class sentinel_watch final : public socket_user, public std::enable_shared_from_this<sentinel_watch>
{
  public:
    using listener = std::function<void(const server_address& master)>;

    sentinel_watch(boost::asio::any_io_executor strand, node n, connection_settings settings,
                   listener on_switch);

    /// Starts listening, unless it already does. On the strand.
    void start();
    /// Stops for good. On the strand.
    void stop();

    // socket_user: the subscription's confirmation is counted by the multiplexer; the
    // Sentinels' messages come as pushes.
    void on_reply(reader_action&) override {}
    void on_push(resp::reply& message) override;
    void on_failure(const socket_failure& failure) override;

  private:
    boost::asio::awaitable<void> run();
    boost::asio::awaitable<void> listen(const server_address& sentinel);

    boost::asio::any_io_executor strand_;
    node node_;
    connection_settings settings_;
    listener on_switch_;
    // The socket being opened, closed by `stop`; it then joins the runner.
    stream opening_;
    multiplexer mux_{socket_use::pubsub};
    runner runner_;
    // While listening, it waits until the socket fails; then for the pause before the next
    // Sentinel.
    boost::asio::steady_timer timer_;
    bool running_ = false;
    bool stopped_ = false;
};

}  // namespace redlock::detail
