// SPDX-License-Identifier: BSL-1.0
#include "engine/pubsub.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

namespace redlock::detail {

namespace {

struct pubsub_word
{
    std::string_view word;
    pubsub_reply kind;
    // The array's length: a pattern message has the pattern too.
    std::size_t elements;
};

// The server's own protocol words (the first element of the array), compared exactly.
constexpr std::array<pubsub_word, 9> pubsub_words{{
    {"message", pubsub_reply::message, 3},
    {"smessage", pubsub_reply::message, 3},
    {"pmessage", pubsub_reply::message, 4},
    {"subscribe", pubsub_reply::subscribed, 3},
    {"psubscribe", pubsub_reply::subscribed, 3},
    {"unsubscribe", pubsub_reply::unsubscribed, 3},
    {"punsubscribe", pubsub_reply::unsubscribed, 3},
    {"ssubscribe", pubsub_reply::shard_subscribed, 3},
    {"sunsubscribe", pubsub_reply::shard_unsubscribed, 3},
}};

bool is_text(const resp::reply& r) noexcept
{
    return r.type == resp::kind::bulk_string || r.type == resp::kind::simple_string;
}

struct unawaited_request final : request_owner
{
    void deliver(std::uint32_t, exec_result) override {}
    bool given_up(std::uint32_t) const noexcept override { return false; }

    command cmd;
};

}  // namespace

pubsub_reply classify_pubsub(const resp::reply& r) noexcept
{
    if (r.type != resp::kind::array || r.elements.size() < 3 || !is_text(r.elements[0])) {
        return pubsub_reply::other;
    }
    for (const pubsub_word& w : pubsub_words) {
        if (r.elements[0].text != w.word || r.elements.size() != w.elements) {
            continue;
        }
        if (w.kind == pubsub_reply::message) {
            return std::all_of(r.elements.begin() + 1, r.elements.end(), is_text)
                       ? w.kind
                       : pubsub_reply::other;
        }
        // A confirmation ends with the count; its channel is nil when there was none to
        // unsubscribe from.
        return r.elements[2].type == resp::kind::integer ? w.kind : pubsub_reply::other;
    }
    return pubsub_reply::other;
}

std::optional<pubsub_message> read_message(const resp::reply& r) noexcept
{
    if (classify_pubsub(r) != pubsub_reply::message) {
        return std::nullopt;
    }
    const auto& e = r.elements;
    if (e.size() == 4) {
        return pubsub_message{.channel = e[2].text, .payload = e[3].text, .pattern = e[1].text};
    }
    return pubsub_message{.channel = e[1].text, .payload = e[2].text, .pattern = {}};
}

std::optional<std::int64_t> confirmed_count(const resp::reply& r) noexcept
{
    switch (classify_pubsub(r)) {
        case pubsub_reply::subscribed:
        case pubsub_reply::unsubscribed:
        case pubsub_reply::shard_subscribed:
        case pubsub_reply::shard_unsubscribed:
            return r.elements[2].integer;
        default:
            return std::nullopt;
    }
}

submission subscription(request_kind kind, std::string_view verb, std::string_view channel)
{
    auto request = std::make_shared<unawaited_request>();
    resp::append_command(request->cmd.payload, {verb, channel});
    const command* cmd = &request->cmd;
    return submission{.owner = std::move(request), .cmd = cmd, .kind = kind};
}

}  // namespace redlock::detail
