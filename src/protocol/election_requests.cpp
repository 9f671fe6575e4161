// SPDX-License-Identifier: BSL-1.0
#include "protocol/election_requests.hpp"

#include "core/error_reply.hpp"
#include "protocol/key_space.hpp"
#include "protocol/script_table.hpp"

#include <charconv>

namespace redlock::detail {

namespace {

// An election's lock key and its leader's hash on a node.
std::vector<std::string> leader_keys(const lock_shape& lock)
{
    const std::string& key = lock.keys.front();
    return {key, leader_key(lock.prefix, key, lock.in_cluster)};
}

// A bulk string of decimal digits as a number; none otherwise.
std::optional<std::uint64_t> number_in(const resp::reply& r)
{
    std::uint64_t n = 0;
    if (r.type != resp::kind::bulk_string) {
        return std::nullopt;
    }
    const char* end = r.text.data() + r.text.size();
    const auto [at, ec] = std::from_chars(r.text.data(), end, n);
    if (ec != std::errc{} || at != end) {
        return std::nullopt;
    }
    return n;
}

}  // namespace

request proclaim_request(const lock_shape& lock, std::string_view owner, const publication& p)
{
    const std::string channel = release_channel(lock.prefix, lock.keys.front(), lock.in_cluster) +
                                std::string(leader_channel_suffix);
    std::vector<std::string> keys = leader_keys(lock);
    keys.push_back(fence_key(lock.prefix, keys.front(), lock.in_cluster));
    return {script_command(script_id::election_proclaim, keys,
                           {owner, std::to_string(p.term), std::to_string(p.version), p.value,
                            pubsub_for(lock.in_cluster).publish, channel}),
            read_script_reply};
}

request leader_read_request(const lock_shape& lock)
{
    return {script_command(script_id::election_read, leader_keys(lock), {}), read_leader_reply};
}

std::optional<leader_entry> leader_on(const resp::reply& r)
{
    const auto& e = r.elements;
    if (r.type != resp::kind::array || (e.size() != 1 && e.size() != 5) ||
        e[0].type != resp::kind::integer) {
        return std::nullopt;
    }
    leader_entry entry;
    if (e[0].integer >= 0) {  // -2: no key, -1: a key without a TTL, which no lock is
        entry.left = std::chrono::milliseconds(e[0].integer);
    }
    if (e.size() == 1) {
        return entry;
    }
    const auto term = number_in(e[2]);
    const auto version = number_in(e[3]);
    if (e[1].type != resp::kind::bulk_string || e[1].text.empty() || !term || !version ||
        e[4].type != resp::kind::bulk_string) {
        return std::nullopt;
    }
    entry.owner = e[1].text;
    entry.term = *term;
    entry.version = *version;
    entry.value = e[4].text;
    return entry;
}

bool is_leader_announcement(std::string_view message)
{
    // A message's kind is its first character and ':', as fair_message.hpp's are.
    return message.size() >= 2 && message[0] == 'l' && message[1] == ':';
}

node_status read_leader_reply(const resp::reply& r, std::string_view, node_failure& why)
{
    if (leader_on(r)) {
        return node_status::ok;
    }
    why = r.is_error() ? error_reply_failure(r.text)
                       : node_failure{node_errc::unexpected_reply,
                                      "unexpected reply to the read of an election's leader"};
    return node_status::error;
}

}  // namespace redlock::detail
