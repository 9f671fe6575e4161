#include <redlock/observability.hpp>
#include <redlock/report.hpp>

#include <algorithm>

namespace redlock {

std::string_view to_string(node_status s) noexcept
{
    switch (s) {
        case node_status::ok:
            return "ok";
        case node_status::taken:
            return "taken";
        case node_status::missing:
            return "missing";
        case node_status::timed_out:
            return "timed out";
        case node_status::error:
            return "error";
        case node_status::abandoned:
            return "abandoned";
    }
    return "unknown";
}

std::string_view to_string(log_level level) noexcept
{
    switch (level) {
        case log_level::debug:
            return "debug";
        case log_level::info:
            return "info";
        case log_level::warning:
            return "warning";
        case log_level::error:
            return "error";
    }
    return "unknown";
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
