// SPDX-License-Identifier: BSL-1.0
#pragma once

// Wake-ups: one pub/sub connection per node, shared by every waiting acquire of a client.
// A release publishes on a channel derived from the key; the subscriber passes each release
// it hears of to its owner (the client's waiter_queue, which decides which of the key's
// waiters tries again at once instead of after its random delay).

#include <redlock/node.hpp>

#include "net/stream.hpp"
#include "node/connection.hpp"
#include "resp/resp.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// Called on the strand for each release message: the lock key (without the channel's
/// prefix) and the released owner value.
using release_listener = std::function<void(std::string_view key, std::string_view value)>;

/// Where a client hears of the releases on one node. On the strand.
class wake_ups
{
  public:
    virtual ~wake_ups() = default;
    /// Listens for releases of lock key `key` until as many `unwatch` calls.
    virtual void watch(std::string_view key) = 0;
    virtual void unwatch(std::string_view key) = 0;
    /// Drops the connections and every watch (client shutdown).
    virtual void close() = 0;
};

/// One pub/sub connection to one server (or to a Sentinel node's master).
class subscriber final : public wake_ups, public std::enable_shared_from_this<subscriber>
{
  public:
    /// Tells `on_release` of every release message. Whatever it refers to must outlive the
    /// subscriber's work: the client owns both and closes the subscriber first. `key_prefix` is
    /// the client's config::key_prefix, which the channels carry (key_space.hpp). `sharded`:
    /// the channels are named and subscribed to for sharded pub/sub (a client with a cluster
    /// node).
    subscriber(boost::asio::any_io_executor strand, node endpoint, connection_settings settings,
               release_listener on_release, std::string key_prefix, bool sharded);

    /// The first watch of a key subscribes to its channel.
    void watch(std::string_view key) override;
    void unwatch(std::string_view key) override;
    void close() override;

  private:
    void send(std::string_view verb, const std::string& channel);
    void start_connect();
    boost::asio::awaitable<void> connect_and_run(std::uint64_t generation);
    void start_writer();
    boost::asio::awaitable<void> write_loop(std::uint64_t generation);
    boost::asio::awaitable<void> read_loop(std::uint64_t generation);
    void on_reply(const resp::reply& r);
    void drop_connection();

    boost::asio::any_io_executor strand_;
    node endpoint_;
    connection_settings settings_;
    release_listener on_release_;
    std::string key_prefix_;
    bool sharded_;
    stream socket_;
    enum class state { disconnected, connecting, connected, closed } state_ = state::disconnected;
    std::uint64_t generation_ = 0;
    bool writing_ = false;
    bool reading_ = false;
    std::string outbox_;
    // Subscriptions the server has confirmed and not yet dropped: the reader runs while
    // this is non-zero or while a subscribe is on its way.
    long confirmed_ = 0;
    long requested_ = 0;
    struct watched
    {
        std::string key;
        std::size_t watches = 0;
    };
    /// The keys watched and their watch counts, by channel.
    std::map<std::string, watched, std::less<>> channels_;
    resp::decoder decoder_;
    clock::time_point retry_at_{};
};

}  // namespace redlock::detail
