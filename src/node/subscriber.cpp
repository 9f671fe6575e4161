// SPDX-License-Identifier: BSL-1.0
#include "node/subscriber.hpp"

#include "node/sentinel/sentinel.hpp"
#include "protocol/key_space.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>

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
      socket_(strand_)
{
}

void subscriber::watch(std::string_view key)
{
    if (state_ == state::closed) {
        return;
    }
    const std::string channel = release_channel(key_prefix_, key, sharded_);
    watched& w = channels_[channel];
    if (++w.watches > 1) {
        return;
    }
    w.key = key;
    if (state_ == state::connected) {
        send(pubsub_for(sharded_).subscribe, channel);
    } else if (state_ == state::disconnected && clock::now() >= retry_at_) {
        start_connect();  // subscribes to every watched channel once connected
    }
    // While in back-off, waiters fall back to their timers.
}

void subscriber::unwatch(std::string_view key)
{
    const std::string channel = release_channel(key_prefix_, key, sharded_);
    auto it = channels_.find(channel);
    if (it == channels_.end()) {
        return;
    }
    if (--it->second.watches == 0) {
        channels_.erase(it);
        if (state_ == state::connected) {
            send(pubsub_for(sharded_).unsubscribe, channel);
        }
    }
}

void subscriber::close()
{
    channels_.clear();
    drop_connection();
    state_ = state::closed;
}

void subscriber::send(std::string_view verb, const std::string& channel)
{
    resp::append_command(outbox_, {verb, channel});
    if (verb == pubsub_for(sharded_).subscribe) {
        ++requested_;
    }
    start_writer();
}

void subscriber::start_connect()
{
    state_ = state::connecting;
    asio::co_spawn(strand_, connect_and_run(generation_), asio::detached);
}

asio::awaitable<void> subscriber::connect_and_run(std::uint64_t generation)
{
    auto self = shared_from_this();
    stream fresh(strand_);
    // Pub/sub channels are not per database: no SELECT.
    std::string reached;  // a Sentinel node's master: subscribing to it is enough
    const node_failure failure =
        co_await open_node(fresh, endpoint_, settings_.connect_timeout, false, settings_.tls.get(),
                           settings_.verify_name, reached);
    if (generation != generation_ || state_ != state::connecting) {
        co_return;
    }
    if (failure) {
        drop_connection();
        co_return;
    }
    socket_ = std::move(fresh);
    decoder_.reset();
    state_ = state::connected;
    for (const auto& [channel, w] : channels_) {
        send(pubsub_for(sharded_).subscribe, channel);
    }
}

void subscriber::start_writer()
{
    if (writing_ || state_ != state::connected || outbox_.empty()) {
        return;
    }
    writing_ = true;
    asio::co_spawn(strand_, write_loop(generation_), asio::detached);
    if (!reading_) {
        reading_ = true;
        asio::co_spawn(strand_, read_loop(generation_), asio::detached);
    }
}

asio::awaitable<void> subscriber::write_loop(std::uint64_t generation)
{
    auto self = shared_from_this();
    std::string batch;
    while (generation == generation_ && !outbox_.empty()) {
        batch.swap(outbox_);
        outbox_.clear();
        auto [ec, n] = co_await socket_.write_all(asio::buffer(batch));
        (void)n;
        if (generation != generation_) {
            co_return;
        }
        if (ec) {
            drop_connection();
            co_return;
        }
    }
    writing_ = false;
}

// Reads while any subscription is confirmed or on its way, so that a client with nobody
// waiting keeps no work pending.
asio::awaitable<void> subscriber::read_loop(std::uint64_t generation)
{
    auto self = shared_from_this();
    std::array<char, 4096> buf;
    while (generation == generation_ && (confirmed_ > 0 || requested_ > 0)) {
        if (auto r = decoder_.next()) {
            on_reply(*r);
            continue;
        }
        if (!decoder_.error().empty()) {
            drop_connection();
            co_return;
        }
        auto [ec, n] = co_await socket_.read_some(asio::buffer(buf));
        if (generation != generation_) {
            co_return;
        }
        if (ec || !decoder_.feed(buf.data(), n)) {
            drop_connection();
            co_return;
        }
    }
    if (generation == generation_) {
        reading_ = false;
    }
}

void subscriber::on_reply(const resp::reply& r)
{
    if (r.type != resp::kind::array || r.elements.size() != 3 ||
        r.elements[0].type != resp::kind::bulk_string) {
        return;
    }
    const std::string& kind = r.elements[0].text;
    const pubsub_words words = pubsub_for(sharded_);
    if (kind == words.subscribed) {
        --requested_;
        confirmed_ = r.elements[2].integer;
    } else if (kind == words.unsubscribed) {
        // Also pushed unasked for a sharded channel whose slot moved to another master: its
        // waiters fall back to their retry timers.
        confirmed_ = r.elements[2].integer;
    } else if (kind == words.message) {
        if (auto it = channels_.find(r.elements[1].text); it != channels_.end()) {
            // A copy: the listener may unwatch the key. The payload is the released owner value
            // (scripts.cpp).
            const std::string key = it->second.key;
            on_release_(key, r.elements[2].text);
        }
    }
}

void subscriber::drop_connection()
{
    ++generation_;
    socket_.close();
    writing_ = false;
    reading_ = false;
    outbox_.clear();
    confirmed_ = 0;
    requested_ = 0;
    decoder_.reset();
    if (state_ != state::closed) {
        state_ = state::disconnected;
        // Waiters keep their timers; the next watch after the pause reconnects.
        retry_at_ = clock::now() + settings_.backoff_min;
    }
}

}  // namespace redlock::detail
