// SPDX-License-Identifier: BSL-1.0
#pragma once

// A Redis error reply (the server's own words, e.g. "WRONGPASS invalid username-password
// pair"): which `node_errc` it means, and what to check. The one place where the server's
// words are read for a decision, by their first word (all capitals, as Redis names its
// errors) or, for the ERR replies that matter, by how they start. Pure functions: no I/O.

#include "core/node_error.hpp"

#include <string>
#include <string_view>

namespace redlock::detail {

/// The code of an error reply: a misconfiguration's (`authentication`, `not_a_master`,
/// `redirected`, ...), `cluster_down` for CLUSTERDOWN, `server_error` for any other.
node_errc classify_error_reply(std::string_view reply_text) noexcept;

/// `reply_text`, followed in parentheses by what to check when it names a misconfiguration
/// (e.g. "the node is a replica: list masters").
std::string with_hint(std::string_view reply_text);

/// An error reply to a lock's command as the node's failure: its code, and "Redis error: "
/// followed by the reply and its hint.
node_failure error_reply_failure(std::string_view reply_text);

}  // namespace redlock::detail
