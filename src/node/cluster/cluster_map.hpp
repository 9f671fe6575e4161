// SPDX-License-Identifier: BSL-1.0
#pragma once

// What a Redis Cluster tells a client about where slots live: the slot map (CLUSTER SLOTS)
// and the redirections (MOVED, ASK) of a request sent to the wrong master. Pure functions:
// they do no I/O.

#include <redlock/node.hpp>

#include "core/node_error.hpp"
#include "core/node_name.hpp"
#include "resp/resp.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// Slots `first` to `last` (inclusive) are served by `master`.
struct slot_range
{
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    server_address master;
};

/// Reads a reply to CLUSTER SLOTS, asked of `asked` (whose host stands in for a master the
/// reply names with an empty or unknown address). Nullopt, with the reason in `why`, for an
/// error reply (the server's words with their hint), a reply of the wrong shape
/// (`unexpected_reply`) or a map without masters (`cluster_down`).
std::optional<std::vector<slot_range>> read_slot_map(const resp::reply& r,
                                                     const server_address& asked,
                                                     node_failure& why);

/// A request that reached a master that does not serve its slot.
struct redirection
{
    /// ASK: only this request goes to `to`, after ASKING (the slot is being migrated there).
    /// MOVED: the slot lives at `to` now.
    bool ask = false;
    std::uint16_t slot = 0;
    server_address to;
};

/// Reads the text of an error reply: a redirection for "MOVED slot host:port" and
/// "ASK slot host:port", nullopt for any other error. `from` is the master that answered,
/// whose host stands in for an empty one (":port"). Pure.
std::optional<redirection> read_redirection(std::string_view error, const server_address& from);

}  // namespace redlock::detail
