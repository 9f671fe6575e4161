// SPDX-License-Identifier: BSL-1.0
#include "lock/election_rules.hpp"

#include "lock/refused_options.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace redlock::detail {

std::string election_problem(const options& opts)
{
    if (!opts.value.empty()) {
        return "options.value cannot be used on an election: each term of leadership needs an "
               "owner value of its own";
    }
    if (opts.auto_extend_limit != 0) {
        return "options.auto_extend_limit cannot be used on an election: a leader leads until "
               "it resigns or loses the lock, not for a number of extensions";
    }
    return first_refused(opts, {{&options::reentrant,
                                 "options.reentrant cannot be used on an election: a candidate "
                                 "campaigning again would queue behind itself"}});
}

options election_options(options opts)
{
    opts.fair = true;
    opts.fencing = true;
    opts.auto_extend = true;
    opts.tries = std::numeric_limits<int>::max();
    return opts;
}

namespace {

// The nodes that name `owner` at `term`.
std::vector<const leader_entry*> naming(const std::vector<std::optional<leader_entry>>& nodes,
                                        const leader_entry& candidate)
{
    std::vector<const leader_entry*> same;
    for (const auto& n : nodes) {
        if (n && n->owner == candidate.owner && n->term == candidate.term) {
            same.push_back(&*n);
        }
    }
    return same;
}

// The view of `quorum` nodes or more that name one leader.
leader_view leader_named_by(std::vector<const leader_entry*> same, std::size_t quorum)
{
    const auto latest = std::max_element(same.begin(), same.end(),
                                         [](auto* a, auto* b) { return a->version < b->version; });
    leader_view v{.answered = true, .who = redlock::leader{(*latest)->value, (*latest)->term}};
    // The leader is named by a quorum until the quorum-th longest life among them runs out.
    std::vector<std::chrono::milliseconds> lives;
    lives.reserve(same.size());
    for (const leader_entry* e : same) {
        lives.push_back(e->left.value_or(std::chrono::milliseconds{0}));
    }
    std::nth_element(lives.begin(), lives.begin() + static_cast<std::ptrdiff_t>(quorum - 1),
                     lives.end(), std::greater<>());
    v.lapses_in = lives[quorum - 1];
    return v;
}

}  // namespace

leader_view view_of(const std::vector<std::optional<leader_entry>>& nodes, std::size_t quorum)
{
    const auto answers = static_cast<std::size_t>(
        std::count_if(nodes.begin(), nodes.end(), [](const auto& n) { return n.has_value(); }));
    if (quorum == 0 || answers < quorum) {
        return {};
    }
    for (const auto& n : nodes) {
        if (!n || n->owner.empty()) {
            continue;
        }
        auto same = naming(nodes, *n);
        if (same.size() >= quorum) {
            return leader_named_by(std::move(same), quorum);
        }
    }
    return {.answered = true};
}

}  // namespace redlock::detail
