// SPDX-License-Identifier: BSL-1.0
#pragma once

// The decisions of a fair acquire's place in the nodes' queue, without I/O: whether to join
// before attempting, the ticket its join agreed on, what each attempt commits and refreshes,
// the stamp each clean-up gives its entry, when it waits for its turn instead of a retry
// delay, which nodes handed it the key and from when that hand-off's validity counts, and
// whether giving up must take its entry out of the queue. Only an acquire of a lock that
// waits in a queue (`kind_rules::waits`) has one; the acquire's state machine (acquire_fsm)
// asks it at its junctions, and the loop in acquire.cpp does the I/O it says.

#include "core/clock.hpp"
#include "lock/fair_rules.hpp"
#include "lock/hand_off_tally.hpp"

#include <redlock/report.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace redlock::detail {

/// What a fair acquire's queue place follows, from its options.
struct fair_queue_rules
{
    /// The acquire may wait (more than one try): it joins the queue, and attempts with its
    /// ticket. With one try (try_acquire) it makes one attempt without joining, which takes
    /// the key only if nobody is queued.
    bool joins = false;
    /// How often its entry is refreshed, and how long it outlives its last refresh.
    fair_timing timing{};
    /// A release may hand it the key: not when its holder needs a fencing token, nor when
    /// the nodes' replicas must acknowledge the key, which only its own attempt gets.
    bool takes_hand_offs = false;
    /// The nodes of the lock, and how many of them agree on a ticket or hand over the key.
    std::size_t nodes = 1;
    std::size_t quorum = 1;
};

/// The instants a hand-off's lock is valid between.
struct hand_off_validity
{
    /// When the clean-up that marked the entry was sent: the lock's validity counts from
    /// here, as an attempt's counts from its start.
    clock::time_point start{};
    clock::time_point until{};
};

class fair_queue_fsm
{
  public:
    /// `hand_offs`: the tally of the acquire's waiter, which the client's line of waiters
    /// feeds the nodes' hand-off messages (`waiter_queue::released`); it must outlive this.
    fair_queue_fsm(fair_queue_rules rules, hand_off_tally& hand_offs)
        : rules_(rules), hand_offs_(hand_offs)
    {
    }

    /// Before an attempt: whether to join the queue first (it may wait and has no agreed
    /// ticket yet). From a join on, nodes may hold its entry, so giving up leaves the queue.
    bool join_first();
    /// The join's round answered with `outcomes`, each node's proposal in its
    /// `fencing_token`: true when a quorum proposed, which agrees on the ticket (the largest
    /// proposal, `agreed_ticket`). The proposals are no tokens: they are cleared.
    bool joined(std::vector<node_outcome>& outcomes);
    /// The ticket, once a join agreed on it.
    std::optional<std::uint64_t> ticket() const { return ticket_; }
    /// How long an entry lives on its node from its last refresh.
    std::chrono::milliseconds entry_ttl() const { return rules_.timing.entry_ttl; }
    /// The longest a waiter behind another waits for its turn: its refresh period, after
    /// which it attempts anyway, and so refreshes its entry.
    std::chrono::milliseconds refresh() const { return rules_.timing.refresh; }

    /// An attempt begins: it commits the entry at the ticket and refreshes it, and unmarks it,
    /// so hand-offs stop counting until the next clean-up.
    void attempt_begins() { hand_offs_.stop(); }
    /// The clean-up after attempt `attempt` is sent at `now`: the stamp it marks the entry
    /// with, for a waiter that takes hand-offs once its ticket is agreed; from here only
    /// hand-offs with that stamp count, and the validity of one counts from `now`.
    std::optional<std::uint64_t> clean_up_sent(int attempt, clock::time_point now);
    /// After a clean-up: whether the waiter waits for its turn (at most its refresh period)
    /// rather than a random retry delay. Only behind another waiter or the holder
    /// (`taken_by_other`), with an agreed ticket, and not for its first wait after joining:
    /// the subscription that tells it of its turn began with its first attempt and may not
    /// be confirmed yet, so a release meanwhile could go unheard for a whole refresh period.
    bool waits_for_turn(bool taken_by_other);

    /// A quorum of nodes handed it the key with the stamp of its last clean-up.
    bool handed_over() const { return hand_offs_.reached(); }
    /// Whom those were: one flag per node.
    const std::vector<bool>& handed_by() const { return hand_offs_.handed_by(); }
    /// The validity of the lock handed over: each node set the key for what was left of the
    /// entry's life, which the last clean-up made the entry's full life on its arrival, so
    /// the key lasts at least `entry_ttl` from the clean-up's sending (docs/safety.md).
    hand_off_validity handed_validity(double drift_factor) const;

    /// Giving up (or cancelled): whether it must take its entries out of the queue first,
    /// which it does once. Its entries would keep the waiters behind it waiting until they
    /// expire.
    bool leaves();

  private:
    fair_queue_rules rules_;
    /// It joined: some nodes may hold its entry.
    bool joined_ = false;
    std::optional<std::uint64_t> ticket_;
    /// It has waited once since joining.
    bool waited_ = false;
    hand_off_tally& hand_offs_;
};

}  // namespace redlock::detail
