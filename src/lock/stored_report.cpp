// SPDX-License-Identifier: BSL-1.0
#include "lock/stored_report.hpp"

#include <redlock/node_error.hpp>

#include "lock/client_impl.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace redlock::detail {

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

}  // namespace redlock::detail
