// SPDX-License-Identifier: BSL-1.0
#pragma once

// Where a client's data lives on a node: the lock keys, the fencing counters beside them and
// the channels their releases are announced on, all behind config::key_prefix. A lock named
// N is the key prefix + N; its counter is prefix + "redlock:fence:" + N and its channel
// prefix + "redlock:released:" + N, so that one prefix (an ACL pattern `~prefix*`
// `&prefix*`, a SCAN MATCH) covers everything a client touches. An empty prefix leaves the
// names as given. On a Redis Cluster the counter and the channel must
// share the lock key's slot; see fence_key.

#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// The Redis keys of the locks named `names`.
std::vector<std::string> lock_keys(std::string_view prefix, std::vector<std::string> names);

/// The fencing counter beside lock key `key` (one of `lock_keys(prefix, ...)`); no TTL.
/// With `in_key_slot` (a client with a Redis Cluster node) it hashes to `key`'s cluster slot,
/// so that one script can touch both: prefix + "redlock:fence:" + N when that already does
/// (N holds a hash tag, or the prefix does), otherwise prefix + "redlock:fence:{" + `key` +
/// "}". Empty when neither does (`key` holds a '}' outside any hash tag).
std::string fence_key(std::string_view prefix, std::string_view key, bool in_key_slot = false);

/// The limit of the semaphore whose holders are under key `key`: its number of permits, with
/// the holders' expiry. Named and placed as `fence_key` names counters:
/// prefix + "redlock:limit:" + N.
std::string limit_key(std::string_view prefix, std::string_view key, bool in_key_slot = false);

/// The parts of a fair lock's queue beside its lock key (see `queue_key`).
enum class queue_part {
    /// A sorted set {owner value: ticket, or proposal while pending}: the queue's order.
    order,
    /// A sorted set {owner value: expiry in the server's ms}.
    expiries,
    /// A hash {owner value: 'p' pending, 'c' committed, or 'c' and a stamp: committed, and
    /// handed the key by a release (scripts.hpp's fair_clean_up_request)}.
    states,
    /// The ticket counter.
    counter,
};

/// Where part `part` of the fair queue of lock key `key` lives. Named and placed as
/// `fence_key` names counters: prefix + "redlock:queue:" + N, "redlock:queue-expiry:",
/// "redlock:queue-state:" and "redlock:ticket:".
std::string queue_key(std::string_view prefix, std::string_view key, queue_part part,
                      bool in_key_slot = false);

/// The registry of the clients waiting for a mutex (one plain key), beside its lock key: an
/// acquire that waits registers its client there, and a release names one of them, which
/// alone hears of it (script_table.cpp's plain_release_naming).
enum class waiters_part {
    /// A sorted set {client channel tag: since when it waits, in the client's microseconds}.
    order,
    /// A hash {client channel tag: when a release last named it, in the server's ms}, cleared
    /// by the client's next attempt.
    named,
};

/// Where part `part` of the waiters' registry of lock key `key` lives. Named and placed as
/// `fence_key` names counters: prefix + "redlock:waiters:" + N and "redlock:waiters-named:".
std::string waiters_key(std::string_view prefix, std::string_view key, waiters_part part,
                        bool in_key_slot = false);

/// What a client appends to a lock's release channel to hear the messages for its own
/// waiters (script_table.cpp): '/' and its channel tag. A release then wakes the one client
/// whose waiter it names, not every client that waits (a fair lock's queue, a mutex's
/// registry of waiters).
std::string client_channel_suffix(std::string_view channel_tag);

/// The hash beside an election's lock key `key` in which its leader publishes its value:
/// {owner, term, version, value}. Named and placed as `fence_key` names counters:
/// prefix + "redlock:leader:" + N.
std::string leader_key(std::string_view prefix, std::string_view key, bool in_key_slot = false);

/// What an election's release channel is followed by to carry its announcements: a leader's
/// publication and its resignation ('/' and a word that no channel tag is: tags are hex).
inline constexpr std::string_view leader_channel_suffix = "/leader";

/// The channel a release of lock key `key` is announced on. With `in_key_slot` it hashes to
/// `key`'s cluster slot, named as `fence_key` names counters (sharded pub/sub needs that).
std::string release_channel(std::string_view prefix, std::string_view key,
                            bool in_key_slot = false);

/// The commands and message kinds of the pub/sub that carries releases: classic, or sharded
/// (SPUBLISH, SSUBSCRIBE: the channel lives in a cluster slot, on its master) for a client
/// with a Redis Cluster node, where a classic message would go to every server of the cluster.
struct pubsub_words
{
    std::string_view publish, subscribe, unsubscribe;
    /// The first element of the pushed replies: confirmations and messages.
    std::string_view subscribed, unsubscribed, message;
};

constexpr pubsub_words pubsub_for(bool sharded) noexcept
{
    if (sharded) {
        return {"SPUBLISH", "SSUBSCRIBE", "SUNSUBSCRIBE", "ssubscribe", "sunsubscribe", "smessage"};
    }
    return {"PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE", "subscribe", "unsubscribe", "message"};
}

}  // namespace redlock::detail
