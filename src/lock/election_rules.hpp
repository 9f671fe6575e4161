// SPDX-License-Identifier: BSL-1.0
#pragma once

// What makes an election of a fair mutex: the options it takes and those it refuses, and who
// leads according to the nodes' answers (pure, tested without a server).

#include <redlock/leader.hpp>
#include <redlock/options.hpp>

#include "protocol/election_requests.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// The largest value a leader may publish: a hash field on every node, copied to every
/// reader of the leader.
inline constexpr std::size_t max_published_value = std::size_t{64} * 1024;

/// Why an election cannot be made with `opts`, empty when it can: a fixed owner value (each
/// term needs its own), reentrant holds, an extension limit (the leadership lasts until it is
/// resigned or lost).
std::string election_problem(const options& opts);

/// `opts` as an election uses them: fair, fenced (the term is the token) and kept by the
/// watchdog whatever was set; a campaign waits until it leads (`tries` unbounded), bounded
/// only by `options::wait`.
options election_options(options opts);

/// Who leads, from each node's view (none: the node did not answer). The leader is the owner
/// and term that at least `quorum` nodes name, with the value of its latest publication among
/// them; none when no owner has a quorum.
struct leader_view
{
    /// At least `quorum` nodes answered: the view says something.
    bool answered = false;
    std::optional<redlock::leader> who{};
    /// When the nodes naming the leader would be fewer than a quorum if nobody extended the
    /// lock: from the answers' ttls. None without a leader.
    std::optional<std::chrono::milliseconds> lapses_in{};
};

leader_view view_of(const std::vector<std::optional<leader_entry>>& nodes, std::size_t quorum);

}  // namespace redlock::detail
