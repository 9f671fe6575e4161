// SPDX-License-Identifier: BSL-1.0
#pragma once

// Where a key lives in a Redis Cluster: its hash slot, from CRC16 of the key or of its hash
// tag (the text between the first '{' and the next '}', when that is not empty). Keys that
// one command or script touches together must share a slot.

#include "engine/request.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace redlock::detail {

/// The number of hash slots of a Redis Cluster.
inline constexpr std::uint16_t cluster_slots = 16384;

/// The part of `key` that a Redis Cluster hashes: its hash tag if it has one, else all of it.
std::string_view hashed_part(std::string_view key) noexcept;

/// The hash slot of `key` (what CLUSTER KEYSLOT answers).
std::uint16_t key_slot(std::string_view key) noexcept;

/// The hash slot of the keys `cmd` touches (`command::key_at`); none for a command without
/// keys.
std::optional<std::uint16_t> slot_of(const command& cmd) noexcept;

}  // namespace redlock::detail
