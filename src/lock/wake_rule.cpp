// SPDX-License-Identifier: BSL-1.0
#include "lock/wake_rule.hpp"

#include <utility>

namespace redlock::detail {

namespace {

// What keeps a line's pausing waiters of each rule from being woken by a release.
struct holding_back
{
    /// A waiter of one owner is not pausing: the client has its contender for the lock.
    bool owner_contends = false;
    /// A waiter of one owner is in the line: a writer that waits goes before new readers
    /// (its intent keeps them out), so readers wait for its release.
    bool owner_waits = false;
    /// A waiter of a permit is attempting and had heard of no release: it takes this one.
    bool permit_taken = false;
};

holding_back what_holds_back(std::span<const line_member> line)
{
    holding_back h;
    for (const line_member& m : line) {
        h.owner_waits |= m.rule == wake_rule::one_owner;
        h.owner_contends |= m.rule == wake_rule::one_owner && !is_pausing(m.state);
        h.permit_taken |= m.rule == wake_rule::one_permit && m.state == waiter_state::attempting;
    }
    return h;
}

}  // namespace

std::vector<release_effect> release_effects(std::span<const line_member> line)
{
    const holding_back h = what_holds_back(line);
    bool owner_turn_taken = h.owner_contends;
    bool permit_turn_taken = h.permit_taken;
    std::vector<release_effect> effects(line.size(), release_effect::none);
    for (std::size_t i = 0; i < line.size(); ++i) {
        bool wake = false;
        if (!is_pausing(line[i].state)) {
            effects[i] = release_effect::seen;
            continue;
        }
        switch (line[i].rule) {
            case wake_rule::one_owner:
                wake = !std::exchange(owner_turn_taken, true);
                break;
            case wake_rule::shared:
                wake = !h.owner_waits;
                break;
            case wake_rule::one_permit:
                wake = !std::exchange(permit_turn_taken, true);
                break;
        }
        effects[i] = wake ? release_effect::woken : release_effect::none;
    }
    return effects;
}

}  // namespace redlock::detail
