// SPDX-License-Identifier: BSL-1.0
#pragma once

// Inspection of a lock key on every node (client::async_inspect): the read-only script that
// reads the key in one round trip, and how its reply becomes a key_state.

#include <redlock/inspect.hpp>

#include "engine/request.hpp"
#include "resp/resp.hpp"

#include <string_view>

namespace redlock::detail {

/// The script reading `key`'s type, remaining TTL and contents (GET for a string, HGETALL
/// for a hash, ZRANGE WITHSCORES for a sorted set), and whether the node is a replica. It
/// answers {type, pttl, master}, {type, pttl, master, value} for a string,
/// {type, pttl, master, fields, now} for a hash and {type, pttl, master, entries, now, limit}
/// for a sorted set; `master` is "host:port" on a replica, empty otherwise; `now` is the
/// server's time in ms; `limit` is what `limit_key` holds ('' without it, or when the key
/// is missing).
command inspect_command(std::string_view key, std::string_view limit_key = {});

/// Fills `s`'s kind, type, holders and ttl from a reply to `inspect_command`; an unexpected
/// reply (a Redis error, a script the server cannot run) sets `s.error` instead.
void read_inspect_reply(const resp::reply& r, key_state& s);

}  // namespace redlock::detail
