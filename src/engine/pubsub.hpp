// SPDX-License-Identifier: BSL-1.0
#pragma once

// How a RESP2 connection in pub/sub mode reads what the server sends: a message on a channel,
// or the confirmation of a (un)subscription, each an array whose first element says which.
// Pure functions: they do no I/O.
//
// A subscribed RESP2 connection still answers its commands in order (confirmations, errors,
// PING's ["pong", ""]); messages come in between at any time, and a server may drop a sharded
// channel unasked (its slot moved), which it tells as an unasked `sunsubscribe`. The
// multiplexer (multiplexer.hpp) sorts these out with `classify_pubsub`.

#include "engine/multiplexer.hpp"
#include "resp/resp.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace redlock::detail {

/// What one reply on a pub/sub connection is.
enum class pubsub_reply {
    /// Not pub/sub traffic: an ordinary reply (an error, PING's pong).
    other,
    /// A message: ["message", channel, payload], ["smessage", ...] or
    /// ["pmessage", pattern, channel, payload].
    message,
    /// ["subscribe" | "psubscribe", channel, count]: `count` channels and patterns now.
    subscribed,
    /// ["unsubscribe" | "punsubscribe", channel, count].
    unsubscribed,
    /// ["ssubscribe", channel, count]: `count` shard channels now.
    shard_subscribed,
    /// ["sunsubscribe", channel, count], asked for or not.
    shard_unsubscribed,
};

pubsub_reply classify_pubsub(const resp::reply& r) noexcept;

/// A message's parts, viewing into the reply it was read from.
struct pubsub_message
{
    std::string_view channel;
    std::string_view payload;
    /// For a message to a pattern subscription: the pattern; empty otherwise.
    std::string_view pattern;
};

/// The parts of `r` when it is a message (`classify_pubsub` says `message`).
std::optional<pubsub_message> read_message(const resp::reply& r) noexcept;

/// The subscription count a confirmation carries; nullopt for anything else.
std::optional<std::int64_t> confirmed_count(const resp::reply& r) noexcept;

/// A (un)subscription of one channel (`verb`: SUBSCRIBE, SSUBSCRIBE, UNSUBSCRIBE, ...) as a
/// request for a multiplexer, whose outcome nobody awaits: the multiplexer counts its
/// confirmation, and an error reply (a refused channel) leaves the channel out. Its owner
/// keeps the command alive while it is queued or in flight.
submission subscription(request_kind kind, std::string_view verb, std::string_view channel);

}  // namespace redlock::detail
