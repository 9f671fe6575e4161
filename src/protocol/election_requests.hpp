// SPDX-License-Identifier: BSL-1.0
#pragma once

// The requests an election adds to its fair lock's (`election_scripts`): the leader's
// publication of its value and the read of who leads, and how a node's answer to the read is
// understood. The value lives in a hash beside the lock key (`leader_key`) for as long as the
// key holds its owner; a node names a leader only while both agree.

#include "protocol/scripts.hpp"
#include "resp/resp.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// What a leader publishes: its term (its guard's fencing token), a version that grows with
/// each publication of the same leader, and the value.
struct publication
{
    std::uint64_t term = 0;
    std::uint64_t version = 0;
    std::string_view value;
};

/// Publishes `p` where the lock key holds `owner`, raising the fencing counter to its term
/// there, and announces it on the election's channel (`leader_channel_suffix`). Read as
/// `read_script_reply` reads (1 ok, 0 missing, -1 taken).
request proclaim_request(const lock_shape& lock, std::string_view owner, const publication& p);

/// Who leads on one node: read with `read_leader_reply`, which keeps nothing; the round keeps
/// the replies (`round::kept_replies`) for `leader_on`.
request leader_read_request(const lock_shape& lock);

/// Whether a message on a lock key's channels is an election's announcement ('l:' and the
/// term of a publication, or nothing after it for a resignation) rather than a release's.
bool is_leader_announcement(std::string_view message);

/// A node's view of the leader.
struct leader_entry
{
    /// What is left of the lock key's life on the node (its PTTL; none when it has no key).
    std::optional<std::chrono::milliseconds> left{};
    /// The leader's owner value, term, version and value; an empty owner when the node names
    /// nobody.
    std::string owner{};
    std::uint64_t term = 0;
    std::uint64_t version = 0;
    std::string value{};
};

/// The answer of `leader_read_request` as an entry; none when it is not one.
std::optional<leader_entry> leader_on(const resp::reply& r);

/// `ok` when the reply is a well-formed answer of the read (`leader_on`), an `error` with
/// `unexpected_reply` otherwise.
node_status read_leader_reply(const resp::reply& r, std::string_view value, node_failure& why);

}  // namespace redlock::detail
