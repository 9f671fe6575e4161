// SPDX-License-Identifier: BSL-1.0
#pragma once

// The decisions of one Redlock round, without I/O: when its caller stops waiting, why the
// nodes still pending are given up, when their deadline has passed, and when the requests left
// in the background are done with. Unit-tested in tests/unit/test_round_fsm.cpp.
//
// How `run_round` (quorum.cpp) uses it, on the client's strand:
// - submit: `skipped(i)` for each node that does not get the command; the others are pending.
// - a node's outcome arrives (`request_owner::deliver`): nothing if `!pending(i)`; otherwise,
//   unless `handed_over()`, the outcome is read into the node's slot (`read_result`); then
//   `answered(i, status)`, and when it returns true the round's timer is cancelled, which wakes
//   the wait under way.
// - the round's coroutine, and later its background wait, loop on `next(now, cancelled)` and do
//   what it says; `wait` is the one step that waits, on the round's timer (set to the
//   deadline), and the loop asks again once it ends, whatever ended it.

#include <redlock/node_error.hpp>
#include <redlock/report.hpp>

#include "core/clock.hpp"
#include "engine/request.hpp"
#include "protocol/scripts.hpp"
#include "quorum/tally.hpp"

#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace redlock::detail {

/// What a round's driver does next.
enum class round_step {
    /// Wait until `answered` asks for a wake-up, the deadline passes or the caller cancels;
    /// then `next`.
    wait,
    /// The deadline passed while the caller waits: node `action::node`'s outcome is
    /// `timed_out`, and its link hears that it was given up at its deadline; then `next`.
    time_out,
    /// Stop waiting for node `action::node` (its reply will be dropped) and tell its link,
    /// with `action::timed_out` (the background's deadline passed); then `next`.
    give_up,
    /// The caller gets the outcomes: the nodes still `pending` are `abandoned`, with
    /// `action::why` as their code; then `next`.
    hand_over,
    /// The requests still pending go on without the caller: the client's background work
    /// begins, the caller gets its outcomes, and a background wait takes over the loop.
    continue_in_background,
    /// The background is done with (every node answered or was given up): the client's
    /// background work ends; then `next`.
    background_done,
    /// Nothing left to do: the caller gets its outcomes now, if it has not had them.
    complete,
};

class round_fsm
{
  public:
    struct action
    {
        round_step step = round_step::complete;
        /// For `time_out` and `give_up`.
        std::uint32_t node = 0;
        /// For `give_up`: the node is given up at its deadline (a link whose server lets every
        /// request time out gives up its socket).
        bool timed_out = false;
        /// For `hand_over`: why the nodes still pending were not waited for.
        node_errc why = node_errc::decided_by_quorum;
    };

    /// A round of `nodes` requests that stops by `rule`, needs `quorum` oks (0: a majority)
    /// and is given up at `deadline`. `background`: what is pending when the caller gets its
    /// outcomes goes on until answered or the deadline (the client counts it as background
    /// work); otherwise it is given up then.
    round_fsm(std::size_t nodes, std::size_t quorum, stop_rule rule, clock::time_point deadline,
              bool background);

    /// Node `i` does not get the command: it counts at once as `missing`. While submitting.
    void skipped(std::size_t i) noexcept;

    /// Whether node `i`'s outcome is still awaited (its request is neither answered nor given
    /// up): the link asks this through `request_owner::given_up`.
    bool pending(std::size_t i) const noexcept { return pending_[i] != 0; }
    /// The caller has its outcomes: a node's outcome is no longer read, only counted down.
    bool handed_over() const noexcept { return handed_over_; }

    /// Node `i`, pending, answered with `status` (read from its reply, or the failure, time-out
    /// or cancellation of its request; ignored once handed over). Returns true when the wait
    /// under way must end: the outcome is decided, or, in the background, every node answered.
    bool answered(std::size_t i, node_status status) noexcept;

    /// What to do now, at `now`; `cancelled`: the caller cancelled its wait (ignored once it
    /// has its outcomes).
    action next(clock::time_point now, bool cancelled) noexcept;

    /// The counts so far (the nodes that answered before the caller got its outcomes).
    const tally& seen() const noexcept { return seen_; }
    /// Nodes whose request is still awaited.
    std::size_t remaining() const noexcept { return remaining_; }

  private:
    enum class phase {
        /// The caller waits.
        live,
        /// The deadline passed while the caller waited: every node still pending times out.
        expired,
        /// The caller has its outcomes; the nodes still pending are given up.
        abandoning,
        /// The caller has its outcomes; the nodes still pending go on in the background.
        handed_to_background,
        background,
        done,
    };

    action next_live(clock::time_point now, bool cancelled) noexcept;
    action next_in_background(clock::time_point now) noexcept;
    /// Gives up the next node still pending, or returns false when there is none.
    bool give_up_next(action& a) noexcept;
    node_errc why_handed_over(bool cancelled) const noexcept;

    boost::container::small_vector<unsigned char, 8> pending_;
    std::size_t remaining_;
    tally seen_;
    stop_rule rule_;
    clock::time_point deadline_;
    bool background_;
    phase phase_ = phase::live;
    bool handed_over_ = false;
    /// The driver waits: a decisive `answered` wakes it (once).
    bool waiting_ = false;
    /// Where the next `give_up_next` looks first.
    std::size_t cursor_ = 0;
};

/// How a round reads a node's reply (see `round`).
struct reply_reading
{
    reply_reader read = nullptr;
    /// The owner value the reply is compared with.
    std::string_view value{};
    /// WAIT follows the command: its count must reach this for an ok to count. 0: no WAIT.
    int replicas = 0;
    /// An ok's reply is a fencing token, kept in the outcome.
    bool replies_with_token = false;
};

/// Fills `o` (all but its latency) from what node's request came to, and returns its status:
/// a reply as `how` reads it (WAIT's count short of `how.replicas` makes an ok an `error`,
/// `not_replicated`), a time-out, a failure (`error`) or a cancellation (`abandoned`) with the
/// request's code and detail.
node_status read_result(node_outcome& o, exec_result&& r, const reply_reading& how);

}  // namespace redlock::detail
