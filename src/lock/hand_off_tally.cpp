// SPDX-License-Identifier: BSL-1.0
#include "lock/hand_off_tally.hpp"

namespace redlock::detail {

void hand_off_tally::expect(std::uint64_t stamp, clock::time_point sent_at, std::size_t nodes,
                            std::size_t quorum)
{
    stamp_ = stamp;
    sent_at_ = sent_at;
    by_.assign(nodes, false);
    handed_ = 0;
    quorum_ = quorum;
}

void hand_off_tally::stop()
{
    stamp_.reset();
    by_.assign(by_.size(), false);
    handed_ = 0;
}

bool hand_off_tally::heard(std::size_t node, std::uint64_t stamp)
{
    if (!stamp_ || stamp != *stamp_ || node >= by_.size() || by_[node]) {
        return false;
    }
    by_[node] = true;
    return ++handed_ == quorum_;
}

}  // namespace redlock::detail
