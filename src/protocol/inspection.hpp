// SPDX-License-Identifier: BSL-1.0
#pragma once

// Inspection of a lock key on every node (client::async_inspect): the read-only script that
// reads the key in one round trip, and how its reply becomes a key_state.

#include <redlock/inspect.hpp>

#include "engine/request.hpp"
#include "resp/resp.hpp"

#include <array>
#include <string>
#include <string_view>

namespace redlock::detail {

/// The keys an inspection reads: the lock key and, beside it, a semaphore's limit and a fair
/// lock's queue (its order, its entries' expiries, their states). The keys beside it are all
/// empty when they cannot be named in the key's cluster slot; then only the key is read.
struct inspected_keys
{
    std::string key;
    std::string limit;
    std::array<std::string, 3> queue;
};

/// The keys an inspection of lock key `key` (which starts with `prefix`) reads; with
/// `in_cluster`, named in `key`'s slot.
inspected_keys inspected_keys_of(std::string_view prefix, std::string_view key, bool in_cluster);

/// The script reading the key's type, remaining TTL and contents (GET for a string, HGETALL
/// for a hash, ZRANGE WITHSCORES for a sorted set), and whether the node is a replica. It
/// answers {type, pttl, master}, {type, pttl, master, value} for a string,
/// {type, pttl, master, fields, now} for a hash and {type, pttl, master, entries, now, limit}
/// for a sorted set; `master` is "host:port" on a replica, empty otherwise; `now` is the
/// server's time in ms; `limit` is what the limit key holds ('' without it, or when the key
/// is missing). Given the queue's keys, a string answers {type, pttl, master, value, now,
/// queue} and a missing key {type, pttl, master, now, queue}, where `queue` lists value,
/// ticket, state ('c' committed, maybe with a hand-off stamp; 'p' pending) and expiry (the server's
/// ms) of each entry in the queue's order ('' for a part the node lacks).
command inspect_command(const inspected_keys& keys);

/// Fills `s`'s kind, type, holders, permits, queue and ttl from a reply to `inspect_command`; an
/// unexpected reply (a Redis error, a script the server cannot run) sets `s.error` instead.
void read_inspect_reply(const resp::reply& r, key_state& s);

}  // namespace redlock::detail
