// SPDX-License-Identifier: BSL-1.0
#pragma once

// Counting node outcomes towards a quorum, as a plain value type.

#include <redlock/report.hpp>

#include <cstddef>

namespace redlock::detail {

/// The majority of n nodes.
constexpr std::size_t quorum_of(std::size_t n) noexcept
{
    return n / 2 + 1;
}

/// Outcomes seen so far in one round of requests to n nodes.
struct tally
{
    std::size_t nodes = 0;
    std::size_t ok = 0;
    std::size_t taken = 0;
    std::size_t missing = 0;
    std::size_t failed = 0;  // timed out, error or abandoned

    constexpr std::size_t answered() const noexcept { return ok + taken + missing + failed; }
    /// Nodes that replied, whatever they said.
    constexpr std::size_t replied() const noexcept { return ok + taken + missing; }
    constexpr std::size_t quorum() const noexcept { return quorum_of(nodes); }
    constexpr bool reached() const noexcept { return ok >= quorum(); }
    /// Even if every node still pending said ok, there would be no quorum.
    constexpr bool impossible() const noexcept { return ok + (nodes - answered()) < quorum(); }
    /// Another owner holds a quorum of nodes.
    constexpr bool taken_by_other() const noexcept { return taken >= quorum(); }

    constexpr void add(node_status s) noexcept
    {
        switch (s) {
            case node_status::ok:
                ++ok;
                break;
            case node_status::taken:
                ++taken;
                break;
            case node_status::missing:
                ++missing;
                break;
            default:
                ++failed;
                break;
        }
    }
};

/// When a round may stop waiting for the nodes that have not answered.
enum class stop_rule {
    /// Wait for every node (or its deadline): what is left of a round that completed early
    /// and goes on in the background.
    all_answered,
    /// Stop once a quorum said ok; wait for all otherwise.
    quorum_reached,
    /// Stop once the outcome is known either way: release, valid, and an attempt with
    /// fail_fast.
    outcome_known,
    /// Stop once a quorum replied, whatever the replies were, or once that can no longer
    /// happen: the clean-up after a failed attempt, where any reply shows that the node no
    /// longer holds the attempt's value.
    quorum_replied,
};

constexpr bool decided(const tally& t, stop_rule rule) noexcept
{
    if (t.answered() >= t.nodes) {
        return true;
    }
    switch (rule) {
        case stop_rule::all_answered:
            return false;
        case stop_rule::quorum_reached:
            return t.reached();
        case stop_rule::outcome_known:
            return t.reached() || t.impossible();
        case stop_rule::quorum_replied:
            return t.replied() >= t.quorum() || t.failed > t.nodes - t.quorum();
    }
    return false;
}

}  // namespace redlock::detail
