// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// The leader of an election, as anyone sees it.

#include <cstdint>
#include <string>

namespace redlock {

/// A leader of an `election`: the value it published and its term.
struct leader
{
    /// What the leader published (`election::async_campaign`, `election::async_proclaim`):
    /// any bytes.
    std::string value;
    /// The leader's `guard::fencing_token()`: each new leader's term is greater than every
    /// earlier leader's, so a leader's term fences what it writes (`fenced_store`).
    std::uint64_t term = 0;

    /// Equal when both the value and the term are.
    friend bool operator==(const leader&, const leader&) = default;
};

}  // namespace redlock
