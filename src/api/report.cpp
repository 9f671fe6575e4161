// SPDX-License-Identifier: BSL-1.0
#include <redlock/observability.hpp>
#include <redlock/report.hpp>

#include "lock/client_impl.hpp"
#include "lock/stored_report.hpp"

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

// ---- stored_report ----

namespace detail {

stored_report::stored_report(const report& r) : attempts_(r.attempts)
{
    outcomes_.reserve(r.nodes.size());
    std::shared_ptr<rare> extra;
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
        const node_outcome& o = r.nodes[i];
        const auto us =
            std::clamp<std::chrono::microseconds::rep>(o.latency.count(), 0, 0xffffffff);
        // The library's outcomes carry codes of one category only.
        const bool has_code = o.code.category() == node_error_category();
        outcomes_.push_back(
            compact_outcome{static_cast<std::uint32_t>(us), o.status,
                            static_cast<std::uint8_t>(has_code ? o.code.value() : 0)});
        const bool rare_detail =
            !o.detail.empty() && !(o.status == node_status::abandoned && has_code);
        if (rare_detail || o.fencing_token != 0) {
            if (!extra) {
                extra = std::make_shared<rare>();
            }
            if (rare_detail) {
                extra->details.emplace_back(static_cast<std::uint32_t>(i), o.detail);
            }
            if (o.fencing_token != 0) {
                extra->tokens.emplace_back(static_cast<std::uint32_t>(i), o.fencing_token);
            }
        }
    }
    rare_ = std::move(extra);
}

report stored_report::expand(const client_impl& c) const
{
    report r;
    r.attempts = attempts_;
    r.nodes.resize(outcomes_.size());
    for (std::size_t i = 0; i < outcomes_.size(); ++i) {
        node_outcome& o = r.nodes[i];
        if (i < c.connections.size()) {
            o.endpoint = c.connections[i]->name();
        }
        o.status = outcomes_[i].status;
        o.latency = std::chrono::microseconds(outcomes_[i].latency_us);
        if (outcomes_[i].code != 0) {
            o.code = static_cast<node_errc>(outcomes_[i].code);
            if (o.status == node_status::abandoned) {
                o.detail = o.code.message();
            }
        }
    }
    if (rare_) {
        for (const auto& [i, detail] : rare_->details) {
            r.nodes[i].detail = detail;
        }
        for (const auto& [i, token] : rare_->tokens) {
            r.nodes[i].fencing_token = token;
        }
    }
    return r;
}

}  // namespace detail

}  // namespace redlock
