// SPDX-License-Identifier: BSL-1.0
#pragma once

// The quorum layer: one command on every node at once, counted towards a quorum.

#include <redlock/report.hpp>

#include "node/node_link.hpp"
#include "protocol/scripts.hpp"
#include "quorum/background_work.hpp"
#include "quorum/tally.hpp"
#include "quorum/write_hold.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// One round of a command on every node.
struct round
{
    /// The command, sent unchanged to every node.
    command cmd{};
    /// How a reply counts; `value` is the owner value it is compared with. Only replies that
    /// arrive while the round is awaited are read, so `value` must outlive that await (the
    /// caller's acquisition or lock state holds it), not the requests left in the background.
    reply_reader read = nullptr;
    std::string_view value{};
    /// Each node's request is given up at this instant.
    clock::time_point deadline{};
    stop_rule rule = stop_rule::quorum_reached;
    /// The nodes that must say ok for a quorum (`tally::need`); 0 for a majority.
    std::size_t quorum = 0;
    bool shuffle = false;
    /// The reply to an accepted request is a fencing token (a fenced acquire): keep it in
    /// the node's outcome.
    bool replies_with_token = false;
    /// With a command followed by WAIT (`add_replica_wait`): how many replicas must have
    /// acknowledged for a node's ok to count (`read_replicated_reply`). 0: no WAIT.
    int replicas = 0;
    /// The round is the attempt of a hand-off: the hold on the nodes' writes that kept the
    /// release's requests waiting for it ends once its requests are queued (or if queueing
    /// them fails: writes must never stay held).
    write_hold ends_hold{};
    /// Nodes (by index, when not empty) that do not get the command: each counts at once as
    /// `missing`, with `skip_detail`.
    std::vector<bool> skip{};
    std::string_view skip_detail{};
    /// For a read of data (who leads an election): where each node's reply that read as ok
    /// is kept, at the node's index (sized by `run_round`). Only replies that arrive while the
    /// round is awaited are kept, so it must outlive that await.
    std::vector<resp::reply>* kept_replies = nullptr;
    /// Where the requests still pending when the round completes go on (see `run_round`);
    /// null: they are given up.
    std::shared_ptr<background_work> background{};
};

/// Queues `r`'s command on all `nodes` at once and completes as soon as `r.rule` says the
/// outcome is decided, at `r.deadline`, or when the awaiting coroutine is cancelled.
/// Outcomes are in `nodes` order, without their endpoints (the node at the same index names
/// it); the nodes still pending then are reported as abandoned, with the reason as their code
/// (`decided_by_quorum`, `quorum_impossible`, `cancelled`, `in_background`) and no detail: both
/// are what a stored report fills in when it is read (see `stored_report`). Their requests stay in
/// the connections' pipelines either way. Without `r.background` their replies are dropped. With
/// it, they still count until they arrive or the deadline passes (a timeout still tells the
/// connection the server may be stuck), tracked by `r.background`: a release must not wait for a
/// stopped node, yet the client must not shut down before its deletes are done. Must be awaited on
/// the strand the connections run on.
boost::asio::awaitable<std::vector<node_outcome>> run_round(
    const std::vector<std::shared_ptr<node_link>>& nodes, round r);

/// Sends `cmd` to every node without waiting for replies (the client publishing a release's
/// message itself).
void broadcast(const std::vector<std::shared_ptr<node_link>>& nodes, command cmd);

/// Counts outcomes towards a quorum of `quorum` nodes (0: a majority).
tally count(const std::vector<node_outcome>& outcomes, std::size_t quorum = 0);

/// Whether the nodes whose outcome is an error with a code that `is_misconfiguration` are so
/// many that the others cannot make a quorum of `quorum` nodes (0: a majority): retrying the
/// operation is then pointless.
bool quorum_ruled_out(const std::vector<node_outcome>& outcomes, std::size_t quorum = 0) noexcept;

}  // namespace redlock::detail
