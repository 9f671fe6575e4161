// SPDX-License-Identifier: BSL-1.0
#include "node/subscriber.hpp"

#include "engine/pubsub.hpp"
#include "node/sentinel/sentinel.hpp"
#include "protocol/key_space.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace redlock::detail {

namespace asio = boost::asio;

subscriber::subscriber(asio::any_io_executor strand, node endpoint, connection_settings settings,
                       release_listener on_release, std::string key_prefix, bool sharded)
    : strand_(std::move(strand)),
      endpoint_(std::move(endpoint)),
      settings_(std::move(settings)),
      on_release_(std::move(on_release)),
      key_prefix_(std::move(key_prefix)),
      sharded_(sharded),
      // After a failure it stays down for a fixed pause; waiters fall back to their timers.
      fsm_(settings_.backoff_min, settings_.backoff_min),
      runner_(mux_, *this)
{
}

void subscriber::watch(std::string_view key, std::string_view suffix)
{
    if (fsm_.current() == connection_fsm::state::closed) {
        return;
    }
    const std::string channel = release_channel(key_prefix_, key, sharded_).append(suffix);
    watched& w = channels_[channel];
    if (++w.watches > 1) {
        return;
    }
    w.key = key;
    w.named = !suffix.empty();
    switch (fsm_.admit(clock::now())) {
        case connection_fsm::admission::connect:
            // Subscribes to every watched channel once connected.
            asio::co_spawn(
                strand_,
                [self = shared_from_this(), g = fsm_.generation()] { return self->connect(g); },
                asio::detached);
            break;
        case connection_fsm::admission::queue:
            if (fsm_.current() == connection_fsm::state::connected) {
                send(request_kind::subscribe, channel);
                runner_.write();
            }
            break;
        default:
            break;  // in back-off: waiters fall back to their timers
    }
}

void subscriber::unwatch(std::string_view key, std::string_view suffix)
{
    const std::string channel = release_channel(key_prefix_, key, sharded_).append(suffix);
    auto it = channels_.find(channel);
    if (it == channels_.end()) {
        return;
    }
    if (--it->second.watches == 0) {
        channels_.erase(it);
        if (fsm_.current() == connection_fsm::state::connected) {
            send(request_kind::unsubscribe, channel);
            runner_.write();
        }
    }
}

void subscriber::close()
{
    channels_.clear();
    runner_.close();
    fsm_.close();
    (void)mux_.fail_all();
}

void subscriber::send(request_kind kind, const std::string& channel)
{
    const pubsub_words words = pubsub_for(sharded_);
    (void)mux_.add(subscription(
        kind, kind == request_kind::subscribe ? words.subscribe : words.unsubscribe, channel));
}

asio::awaitable<void> subscriber::connect(std::uint64_t generation)
{
    auto self = shared_from_this();
    stream fresh(strand_);
    // Pub/sub channels are not per database: no SELECT.
    std::string reached;  // a Sentinel node's master: subscribing to it is enough
    const node_failure failure = co_await open_node(fresh, endpoint_, settings_, false, reached);
    if (!fsm_.accepts(generation)) {
        co_return;
    }
    if (failure) {
        drop();
        co_return;
    }
    fsm_.connected();
    runner_.attach(std::move(fresh), weak_from_this());
    for (const auto& [channel, w] : channels_) {
        send(request_kind::subscribe, channel);
    }
    runner_.write();
}

void subscriber::on_push(resp::reply& message)
{
    // Anything else is a confirmation nobody asked for: a sharded channel whose slot moved
    // to another master, dropped by the server, whose waiters fall back to their timers.
    const auto m = read_message(message);
    if (!m) {
        return;
    }
    if (auto it = channels_.find(m->channel); it != channels_.end()) {
        // A copy: the listener may unwatch the key. The payload is the released owner value
        // (scripts.cpp).
        const std::string key = it->second.key;
        on_release_(key, m->payload, it->second.named);
    }
}

void subscriber::on_failure(const socket_failure&)
{
    drop();
}

void subscriber::drop()
{
    runner_.close();
    fsm_.failed(clock::now());
    (void)mux_.fail_all();
}

}  // namespace redlock::detail
