#pragma once

// The quorum layer: one command on every node at once, counted towards a quorum.

#include <redlock/report.hpp>

#include "detail/connection.hpp"
#include "detail/scripts.hpp"
#include "detail/tally.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

/// One round of a command on every node.
struct round
{
    /// The command, sent unchanged to every node.
    command cmd;
    /// How a reply counts; `value` is the owner value it is compared with.
    reply_reader read;
    std::string value;
    /// Each node's request is given up at this instant.
    clock::time_point deadline;
    stop_rule rule = stop_rule::all_answered;
    bool shuffle = false;
    /// The reply to an accepted request is a fencing token (a fenced acquire): keep it in
    /// the node's outcome.
    bool replies_with_token = false;
    /// The round is the attempt of a hand-off (see `connection::hold_writes`): once its
    /// requests are queued, the writes held for it are resumed.
    bool resumes_held_writes = false;
};

/// Runs `r` on all `nodes` at once (a parallel group with one coroutine per node) and
/// completes as soon as `r.rule` says the outcome is decided; nodes still pending then are
/// cancelled and reported as abandoned. Outcomes are in `nodes` order. Must be awaited on
/// the strand the connections run on; cancelling the awaiting coroutine cancels the round.
boost::asio::awaitable<std::vector<node_outcome>> run_round(
    const std::vector<std::shared_ptr<connection>>& nodes, round r);

/// Holds back, then resumes, the writes of every node (see `connection::hold_writes`).
void hold_writes(const std::vector<std::shared_ptr<connection>>& nodes);
void resume_writes(const std::vector<std::shared_ptr<connection>>& nodes);

/// Counts outcomes.
tally count(const std::vector<node_outcome>& outcomes);

}  // namespace redlock::detail
