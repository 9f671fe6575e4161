// SPDX-License-Identifier: BSL-1.0
#include "protocol/fair_message.hpp"

#include <charconv>

namespace redlock::detail {

std::optional<fair_message> read_fair_message(std::string_view text)
{
    if (text.size() < 2 || text[1] != ':') {
        return std::nullopt;
    }
    if (text[0] == 'n') {
        return fair_message{text.substr(2), std::nullopt};
    }
    if (text[0] != 'h') {
        return std::nullopt;
    }
    const std::string_view rest = text.substr(2);
    std::uint64_t stamp = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), stamp);
    if (ec != std::errc{} || end == rest.data() || end == rest.data() + rest.size() ||
        *end != ':') {
        return std::nullopt;
    }
    return fair_message{rest.substr(static_cast<std::size_t>(end - rest.data()) + 1), stamp};
}

}  // namespace redlock::detail
