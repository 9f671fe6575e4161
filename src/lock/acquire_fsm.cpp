// SPDX-License-Identifier: BSL-1.0
#include "lock/acquire_fsm.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <utility>

namespace redlock::detail {

acquire_fsm::action acquire_fsm::complete(error_code ec)
{
    return action{.step = acquire_step::complete, .ec = ec};
}

acquire_fsm::action acquire_fsm::attempt()
{
    if (queue_ && queue_->join_first()) {
        return action{.step = acquire_step::join};
    }
    return action{.step = acquire_step::attempt};
}

acquire_fsm::action acquire_fsm::finish(error_code ec)
{
    if (!queue_ || !queue_->leaves()) {
        return complete(ec);
    }
    last_ = ec;
    return action{.step = acquire_step::leave};
}

acquire_fsm::action acquire_fsm::start(bool line_is_ours)
{
    attempt_ = 1;
    if (queue_) {
        return attempt();
    }
    // While the lock is held by, or being handed to, another acquire of this client and
    // others of its acquires wait for it, a first attempt would fail (the hand-off's request
    // is ahead of it on every connection): this acquire joins the line instead, and that
    // counts as its first attempt.
    if (rules_.tries > 1 && rules_.wake_on_release && !rules_.reentrant && line_is_ours) {
        last_ = error::taken;
        return retry_or_give_up(true);
    }
    return attempt();
}

acquire_fsm::action acquire_fsm::joined(bool agreed, bool quorum_ruled_out, bool cancelled)
{
    if (cancelled) {
        return finish(boost::asio::error::operation_aborted);
    }
    if (quorum_ruled_out) {
        return finish(error::misconfigured);
    }
    if (agreed) {
        // In the queue from now on: it listens for its turn from its first attempt, since
        // a message naming it can only come once its entry is committed.
        action first = attempt();
        if (rules_.wake_on_release && !watching_) {
            watching_ = first.watch_releases = true;
        }
        return first;
    }
    last_ = error::failed;
    return retry_or_give_up(false);
}

acquire_fsm::action acquire_fsm::attempted(attempt_result r, bool cancelled)
{
    result_ = r;
    if (!cancelled && r.quorum_with_validity && !r.invalid_use) {
        // The token may be used only once a majority's counters are at least as large: that
        // is what makes every later acquisition's token larger (docs/safety.md).
        return action{.step =
                          rules_.fencing ? acquire_step::write_back_token : acquire_step::grant};
    }
    // A failed attempt may still have set the key on some nodes (or on all of them, if the
    // validity ran out): it is deleted everywhere before anything else, cancelled or not.
    // Unless every node refused it, for a kind whose refusals write nothing: then it set
    // nothing, and a clean-up would cost each node a request to delete nothing. A node that
    // timed out or failed may have set the key, so one such node keeps the round. So does
    // the first attempt of an acquire whose clean-up registers it as waiting.
    const bool registers_now = rules_.registers_after == attempt_;
    return action{
        .step = acquire_step::clean_up,
        .nothing_set = r.refused_everywhere && rules_.refusal_writes_nothing && !registers_now};
}

acquire_fsm::action acquire_fsm::token_written(bool confirmed, bool cancelled)
{
    return action{.step = confirmed && !cancelled ? acquire_step::grant : acquire_step::clean_up};
}

acquire_fsm::action acquire_fsm::cleaned_up(bool quorum_ruled_out, bool cancelled,
                                            clock::time_point now)
{
    if (cancelled) {
        return finish(boost::asio::error::operation_aborted);
    }
    // Nodes that fail the same way on every try (a wrong password, a replica, ...): once they
    // rule out a quorum, further tries only hide the cause.
    if (result_.invalid_use) {
        return finish(error::invalid_argument);
    }
    if (quorum_ruled_out) {
        return finish(error::misconfigured);
    }
    last_ = result_.taken_by_other ? error::taken : error::failed;
    if (queue_ && queue_->waits_for_turn(result_.taken_by_other)) {
        return wait_for_turn(now);
    }
    // Another owner holds the key: its release may wake the retry.
    return retry_or_give_up(rules_.wake_on_release && result_.some_taken);
}

// In the queue, behind another waiter or the holder: the waiter is told when its turn comes,
// and refreshes its entry with an attempt once its refresh period has passed without that.
acquire_fsm::action acquire_fsm::wait_for_turn(clock::time_point now)
{
    if (attempt_ >= rules_.tries || now >= rules_.give_up_at) {
        return finish(last_);
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(rules_.give_up_at - now);
    return action{.step = acquire_step::pause, .delay = std::min(queue_->refresh(), left)};
}

acquire_fsm::action acquire_fsm::retry_or_give_up(bool watch)
{
    action next = attempt_ >= rules_.tries
                      ? finish(last_)
                      : action{.step = acquire_step::choose_delay, .attempt_number = attempt_};
    if (watch && !watching_) {
        watching_ = true;
        next.watch_releases = true;
    }
    return next;
}

acquire_fsm::action acquire_fsm::delay_chosen(std::chrono::milliseconds delay,
                                              clock::time_point now)
{
    if (now + delay >= rules_.give_up_at) {
        return finish(last_);
    }
    return action{.step = acquire_step::pause, .delay = delay};
}

acquire_fsm::action acquire_fsm::delay_failed()
{
    return finish(error::invalid_argument);
}

acquire_fsm::action acquire_fsm::handed_over(bool valid, bool cancelled)
{
    if (!cancelled && valid) {
        return action{.step = acquire_step::grant};
    }
    // Cancelled, it leaves the queue, which deletes the keys handed to it.
    return paused(cancelled);
}

acquire_fsm::action acquire_fsm::paused(bool cancelled)
{
    if (cancelled) {
        return finish(boost::asio::error::operation_aborted);
    }
    ++attempt_;
    return attempt();
}

}  // namespace redlock::detail
