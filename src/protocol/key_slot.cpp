// SPDX-License-Identifier: BSL-1.0
#include "protocol/key_slot.hpp"

#include <array>
#include <charconv>

namespace redlock::detail {
namespace {

// CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster hashes with.
constexpr std::array<std::uint16_t, 256> crc16_table = [] {
    std::array<std::uint16_t, 256> table{};
    for (unsigned byte = 0; byte < 256; ++byte) {
        auto crc = static_cast<std::uint16_t>(byte << 8);
        for (int bit = 0; bit < 8; ++bit) {
            crc = static_cast<std::uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
        }
        table[byte] = crc;
    }
    return table;
}();

std::uint16_t crc16(std::string_view data) noexcept
{
    std::uint16_t crc = 0;
    for (char ch : data) {
        const auto byte = static_cast<unsigned char>(ch);
        crc = static_cast<std::uint16_t>((crc << 8) ^ crc16_table[((crc >> 8) ^ byte) & 0xff]);
    }
    return crc;
}

}  // namespace

std::string_view hashed_part(std::string_view key) noexcept
{
    const auto open = key.find('{');
    if (open == std::string_view::npos) {
        return key;
    }
    const auto close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1) {
        return key;  // no tag, or an empty one: the whole key counts
    }
    return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept
{
    return static_cast<std::uint16_t>(crc16(hashed_part(key)) % cluster_slots);
}

std::optional<std::uint16_t> slot_of(const command& cmd) noexcept
{
    if (cmd.key_at == 0) {
        return std::nullopt;
    }
    // The key's bulk string, as the command's builder wrote it: "$<length>\r\n<key>\r\n".
    const std::string_view bulk = std::string_view(cmd.payload).substr(cmd.key_at + 1);
    std::size_t length = 0;
    const auto [end, ec] = std::from_chars(bulk.data(), bulk.data() + bulk.size(), length);
    const auto key_begins = static_cast<std::size_t>(end - bulk.data()) + 2;
    return key_slot(bulk.substr(key_begins, length));
}

}  // namespace redlock::detail
