// SPDX-License-Identifier: BSL-1.0
#include <redlock/lock_event.hpp>
#include <redlock/observability.hpp>
#include <redlock/report.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>

namespace redlock {

namespace {

// The name of a value of `E`, an enum whose values run from 0 without gaps, at its index.
template <typename E, std::size_t N>
std::string_view name_in(const std::array<std::string_view, N>& names, E value) noexcept
{
    const auto i = static_cast<std::size_t>(value);
    return i < N ? names[i] : std::string_view("unknown");
}

}  // namespace

std::string_view to_string(node_status s) noexcept
{
    static constexpr std::array<std::string_view, 6> names{"ok",        "taken", "missing",
                                                           "timed out", "error", "abandoned"};
    static_assert(static_cast<std::size_t>(node_status::abandoned) + 1 == names.size());
    return name_in(names, s);
}

std::string_view to_string(log_level level) noexcept
{
    static constexpr std::array<std::string_view, 4> names{"debug", "info", "warning", "error"};
    static_assert(static_cast<std::size_t>(log_level::error) + 1 == names.size());
    return name_in(names, level);
}

std::string_view to_string(lock_event_kind kind) noexcept
{
    static constexpr std::array<std::string_view, 6> names{"acquired", "acquire_failed", "released",
                                                           "extended", "extend_failed",  "lost"};
    static_assert(static_cast<std::size_t>(lock_event_kind::lost) + 1 == names.size());
    return name_in(names, kind);
}

std::size_t report::count(node_status status) const noexcept
{
    return static_cast<std::size_t>(
        std::count_if(nodes.begin(), nodes.end(),
                      [status](const node_outcome& o) { return o.status == status; }));
}

namespace {

// Details quote server text (error replies): control characters are escaped, so that a
// server can neither add lines to the report nor put terminal escapes into a log.
void append_printable(std::string& out, std::string_view text)
{
    constexpr char hex[] = "0123456789abcdef";
    for (char ch : text) {
        const auto byte = static_cast<unsigned char>(ch);
        if (byte < 0x20 || byte == 0x7f) {
            out += "\\x";
            out += hex[byte >> 4];
            out += hex[byte & 0xf];
        } else {
            out += ch;
        }
    }
}

}  // namespace

std::string report::to_string() const
{
    std::string out;
    for (const node_outcome& o : nodes) {
        out += o.endpoint;
        out += ' ';
        out += redlock::to_string(o.status);
        if (!o.detail.empty()) {
            out += " (";
            append_printable(out, o.detail);
            out += ')';
        }
        out += '\n';
    }
    return out;
}

}  // namespace redlock
