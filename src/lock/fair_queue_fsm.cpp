// SPDX-License-Identifier: BSL-1.0
#include "lock/fair_queue_fsm.hpp"

#include "lock/validity.hpp"

#include <utility>

namespace redlock::detail {

bool fair_queue_fsm::join_first()
{
    if (!rules_.joins || ticket_) {
        return false;
    }
    joined_ = true;
    return true;
}

bool fair_queue_fsm::joined(std::vector<node_outcome>& outcomes)
{
    ticket_ = agreed_ticket(outcomes, rules_.quorum);
    for (node_outcome& o : outcomes) {
        o.fencing_token = 0;  // a proposal, not a token
    }
    return ticket_.has_value();
}

std::optional<std::uint64_t> fair_queue_fsm::clean_up_sent(int attempt, clock::time_point now)
{
    if (!rules_.takes_hand_offs || !ticket_) {
        return std::nullopt;
    }
    // Each clean-up writes its own attempt's number: a stamp on the entry names the clean-up
    // that put it there.
    const auto stamp = static_cast<std::uint64_t>(attempt);
    hand_offs_.expect(stamp, now, rules_.nodes, rules_.quorum);
    return stamp;
}

bool fair_queue_fsm::waits_for_turn(bool taken_by_other)
{
    return ticket_ && taken_by_other && std::exchange(waited_, true);
}

hand_off_validity fair_queue_fsm::handed_validity(double drift_factor) const
{
    const clock::time_point sent = hand_offs_.sent_at();
    return {.start = sent, .until = valid_until(sent, rules_.timing.entry_ttl, drift_factor)};
}

bool fair_queue_fsm::leaves()
{
    return std::exchange(joined_, false);
}

}  // namespace redlock::detail
