// SPDX-License-Identifier: BSL-1.0
#pragma once

// Holding back the writes of every node, so that the requests of two rounds reach each node
// in one write, back to back.

#include "node/node_link.hpp"

#include <memory>
#include <utility>
#include <vector>

namespace redlock::detail {

/// While it holds, the requests queued on its nodes wait (see `connection::hold_writes`);
/// once it ends, what they queued goes out in one write per node. A hand-off takes one
/// before its release round is queued and gives it to the waiter it hands the lock to,
/// whose attempt round ends it once queued (`round::ends_hold`): the release and the attempt
/// then reach every node back to back, and the key is never free. Move-only; ending it
/// twice, or ending an empty one, does nothing.
class write_hold
{
  public:
    /// Holds nothing.
    write_hold() = default;
    /// Holds the writes of `nodes` from now on.
    explicit write_hold(std::vector<std::shared_ptr<node_link>> nodes) : nodes_(std::move(nodes))
    {
        for (const auto& node : nodes_) {
            node->hold_writes();
        }
        held_ = true;
    }
    write_hold(write_hold&& other) noexcept
        : nodes_(std::move(other.nodes_)), held_(std::exchange(other.held_, false))
    {
    }
    write_hold& operator=(write_hold&& other) noexcept
    {
        if (this != &other) {
            end();
            nodes_ = std::move(other.nodes_);
            held_ = std::exchange(other.held_, false);
        }
        return *this;
    }
    write_hold(const write_hold&) = delete;
    write_hold& operator=(const write_hold&) = delete;
    ~write_hold() { end(); }

    /// Whether it still holds.
    explicit operator bool() const noexcept { return held_; }

    /// Lets the nodes write again: what was queued meanwhile goes out now.
    void end()
    {
        if (std::exchange(held_, false)) {
            for (const auto& node : nodes_) {
                node->resume_writes();
            }
            nodes_.clear();
        }
    }

  private:
    std::vector<std::shared_ptr<node_link>> nodes_;
    bool held_ = false;
};

}  // namespace redlock::detail
