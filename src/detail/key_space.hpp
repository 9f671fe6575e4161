// SPDX-License-Identifier: BSL-1.0
#pragma once

// Where a client's data lives on a node: the lock keys, the fencing counters beside them and
// the channels their releases are announced on, all behind config::key_prefix. A lock named
// N is the key prefix + N; its counter is prefix + "redlock:fence:" + N and its channel
// prefix + "redlock:released:" + N, so that one prefix (an ACL pattern `~prefix*`
// `&prefix*`, a SCAN MATCH) covers everything a client touches. With an empty prefix the
// names are those of earlier versions. On a Redis Cluster the counter must share the lock
// key's slot; see fence_key.

#include <optional>
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

/// The channel a release of lock key `key` is announced on.
std::string release_channel(std::string_view prefix, std::string_view key);

/// The lock key whose releases `channel` announces; nullopt when it is no such channel.
std::optional<std::string> released_key(std::string_view prefix, std::string_view channel);

}  // namespace redlock::detail
