// SPDX-License-Identifier: BSL-1.0
#pragma once

// Wake-ups: one pub/sub connection per node, shared by every waiting acquire of a client.
// A release publishes on a channel derived from the key; the subscriber passes each release
// it hears of to its owner (the client's waiter_queue, which decides which of the key's
// waiters tries again at once instead of after its random delay).

#include <redlock/node.hpp>

#include "engine/connection_fsm.hpp"
#include "engine/multiplexer.hpp"
#include "engine/runner.hpp"
#include "node/connection.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace redlock::detail {

/// Called on the strand for each release message: the lock key (without the channel's
/// prefix), the released owner value, and whether it came on a channel with a suffix (the
/// client's own: the release named this client alone).
using release_listener =
    std::function<void(std::string_view key, std::string_view value, bool named)>;

/// Where a client hears of the releases on one node. On the strand.
class wake_ups
{
  public:
    virtual ~wake_ups() = default;
    /// Listens for releases of lock key `key` until as many `unwatch` calls: on its release
    /// channel followed by `suffix` (for a fair lock's waiters, `client_channel_suffix`).
    virtual void watch(std::string_view key, std::string_view suffix = {}) = 0;
    virtual void unwatch(std::string_view key, std::string_view suffix = {}) = 0;
    /// Drops the connections and every watch (client shutdown).
    virtual void close() = 0;
};

/// One pub/sub connection to one server (or to a Sentinel node's master), on the engine: a
/// `connection_fsm` whose back-off is a fixed pause, a pub/sub `multiplexer` and its
/// `runner`. It connects only when someone waits, and reads only while a subscription is
/// confirmed or pending.
class subscriber final : public wake_ups,
                         public socket_user,
                         public std::enable_shared_from_this<subscriber>
{
  public:
    /// Tells `on_release` of every release message. Whatever it refers to must outlive the
    /// subscriber's work: the client owns both and closes the subscriber first. `key_prefix` is
    /// the client's config::key_prefix, which the channels carry (key_space.hpp). `sharded`:
    /// the channels are named and subscribed to for sharded pub/sub (a client with a cluster
    /// node).
    subscriber(boost::asio::any_io_executor strand, node endpoint, connection_settings settings,
               release_listener on_release, std::string key_prefix, bool sharded);

    /// The first watch of a key (with a suffix) subscribes to its channel.
    void watch(std::string_view key, std::string_view suffix = {}) override;
    void unwatch(std::string_view key, std::string_view suffix = {}) override;
    void close() override;

    // socket_user: confirmations are counted by the multiplexer; messages come as pushes.
    void on_reply(reader_action&) override {}
    void on_push(resp::reply& message) override;
    void on_failure(const socket_failure& failure) override;

  private:
    void send(request_kind kind, const std::string& channel);
    boost::asio::awaitable<void> connect(std::uint64_t generation);
    void drop();

    boost::asio::any_io_executor strand_;
    node endpoint_;
    connection_settings settings_;
    release_listener on_release_;
    std::string key_prefix_;
    bool sharded_;
    connection_fsm fsm_;
    multiplexer mux_{socket_use::pubsub};
    runner runner_;
    struct watched
    {
        std::string key;
        std::size_t watches = 0;
        /// Its channel has a suffix: the client's own.
        bool named = false;
    };
    /// The keys watched and their watch counts, by channel.
    std::map<std::string, watched, std::less<>> channels_;
};

}  // namespace redlock::detail
