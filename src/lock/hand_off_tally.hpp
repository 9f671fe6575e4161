// SPDX-License-Identifier: BSL-1.0
#pragma once

// Which nodes handed a fair waiter the lock, without I/O. A release hands the key to the
// queue's head on a node only while the head's entry carries the stamp its last clean-up gave
// it, and says so with that stamp (protocol/fair_message.hpp). The waiter counts the hand-offs
// with the stamp of its latest clean-up only: an older one may have been undone by that
// clean-up, which deletes the key where it holds the waiter's value. Once a quorum of nodes
// handed it the key with the current stamp, the lock is the waiter's until the key can first
// expire on one of them (docs/safety.md).

#include "core/clock.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace redlock::detail {

class hand_off_tally
{
  public:
    /// The clean-up that gives the waiter's entry `stamp` was sent at `sent_at` to `nodes`
    /// nodes; `quorum` of them make the lock. The hand-offs counted so far no longer count.
    void expect(std::uint64_t stamp, clock::time_point sent_at, std::size_t nodes,
                std::size_t quorum);
    /// The waiter attempts: no hand-off counts until its next clean-up.
    void stop();
    /// Node `node` handed the key with `stamp`. True when that completes a quorum.
    bool heard(std::size_t node, std::uint64_t stamp);
    /// A quorum handed the key with the current stamp.
    bool reached() const { return stamp_ && handed_ >= quorum_; }
    /// Which nodes handed the key with the current stamp.
    const std::vector<bool>& handed_by() const { return by_; }
    /// When the clean-up was sent: each node that hands the key sets it for what is left of the
    /// entry's life, which that clean-up made `entry_ttl` from its own arrival.
    clock::time_point sent_at() const { return sent_at_; }

  private:
    std::optional<std::uint64_t> stamp_;
    clock::time_point sent_at_{};
    std::vector<bool> by_;
    std::size_t handed_ = 0;
    std::size_t quorum_ = 0;
};

}  // namespace redlock::detail
