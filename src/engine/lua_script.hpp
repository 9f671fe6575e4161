// SPDX-License-Identifier: BSL-1.0
#pragma once

// A Lua script as a value, as a connection sends it: by its SHA-1 (EVALSHA) once the server
// has loaded it, by its text (EVAL, which also loads it) the first time on a socket and after
// a NOSCRIPT. The scripts themselves are the rows of protocol/script_table.hpp; a command
// names the one it runs (`command::script`).

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// How many scripts the table may hold: the size of a connection's `script_set`.
inline constexpr std::size_t max_scripts = 64;

struct lua_script
{
    /// Its row in the script table, below `max_scripts`: what a connection's cache of loaded
    /// scripts is keyed on.
    std::uint8_t index = 0;
    /// For people: logs, test messages.
    std::string_view name;
    /// How many keys it takes (KEYS); any number, at least one, when empty.
    std::optional<std::size_t> keys;
    /// The Lua source, sent by EVAL.
    std::string_view text;
    /// The lower-case hex SHA-1 of `text`, sent by EVALSHA.
    std::string sha;
};

/// The scripts a socket has been sent as EVAL, by `lua_script::index`.
using script_set = std::bitset<max_scripts>;

}  // namespace redlock::detail
