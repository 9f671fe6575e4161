// SPDX-License-Identifier: BSL-1.0
#include "quorum/round_fsm.hpp"

#include "core/node_error.hpp"

#include <utility>

namespace redlock::detail {

round_fsm::round_fsm(std::size_t nodes, std::size_t quorum, stop_rule rule,
                     clock::time_point deadline, bool background)
    : pending_(nodes, 1),
      remaining_(nodes),
      rule_(rule),
      deadline_(deadline),
      background_(background)
{
    seen_.nodes = nodes;
    seen_.need = quorum;
}

void round_fsm::skipped(std::size_t i) noexcept
{
    pending_[i] = 0;
    --remaining_;
    seen_.add(node_status::missing);
}

bool round_fsm::answered(std::size_t i, node_status status) noexcept
{
    if (!pending_[i]) {
        return false;
    }
    pending_[i] = 0;
    --remaining_;
    const bool caller_waits = !handed_over_;
    if (caller_waits) {
        seen_.add(status);
    }
    // The caller only needs waking once its outcome is decided; the background wait, once
    // every request is answered.
    if (!waiting_ || !(caller_waits ? decided(seen_, rule_) : remaining_ == 0)) {
        return false;
    }
    waiting_ = false;
    return true;
}

node_errc round_fsm::why_handed_over(bool cancelled) const noexcept
{
    if (background_) {
        return node_errc::in_background;
    }
    if (cancelled) {
        return node_errc::cancelled;
    }
    return seen_.reached() || seen_.replied() >= seen_.quorum() ? node_errc::decided_by_quorum
                                                                : node_errc::quorum_impossible;
}

bool round_fsm::give_up_next(action& a) noexcept
{
    for (; cursor_ < pending_.size(); ++cursor_) {
        if (pending_[cursor_]) {
            pending_[cursor_] = 0;
            --remaining_;
            a.node = static_cast<std::uint32_t>(cursor_);
            ++cursor_;
            return true;
        }
    }
    return false;
}

round_fsm::action round_fsm::next_live(clock::time_point now, bool cancelled) noexcept
{
    if (remaining_ == 0) {
        phase_ = phase::done;
        return action{};
    }
    if (decided(seen_, rule_) || cancelled) {
        phase_ = background_ ? phase::handed_to_background : phase::abandoning;
        handed_over_ = true;
        return action{.step = round_step::hand_over, .why = why_handed_over(cancelled)};
    }
    if (now >= deadline_) {
        // Every node still pending times out, even if the first time-outs decide the outcome.
        phase_ = phase::expired;
        return next(now, cancelled);
    }
    waiting_ = true;
    return action{.step = round_step::wait};
}

round_fsm::action round_fsm::next_in_background(clock::time_point now) noexcept
{
    if (remaining_ == 0) {
        phase_ = phase::done;
        return action{.step = round_step::background_done};
    }
    action a{.step = round_step::give_up, .timed_out = true};
    if (now >= deadline_ && give_up_next(a)) {
        return a;
    }
    waiting_ = true;
    return action{.step = round_step::wait};
}

round_fsm::action round_fsm::next(clock::time_point now, bool cancelled) noexcept
{
    // Whatever ended the wait, it is over.
    waiting_ = false;
    action a{};
    switch (phase_) {
        case phase::live:
            return next_live(now, cancelled);
        case phase::expired:
            if (give_up_next(a)) {
                seen_.add(node_status::timed_out);
                a.step = round_step::time_out;
                return a;
            }
            phase_ = phase::done;
            return action{};
        case phase::abandoning:
            if (give_up_next(a)) {
                a.step = round_step::give_up;
                return a;
            }
            phase_ = phase::done;
            return action{};
        case phase::handed_to_background:
            phase_ = phase::background;
            return action{.step = round_step::continue_in_background};
        case phase::background:
            return next_in_background(now);
        case phase::done:
            break;
    }
    return action{};
}

node_status read_result(node_outcome& o, exec_result&& r, const reply_reading& how)
{
    switch (r.status) {
        case exec_result::outcome::replied: {
            node_failure why;
            o.status = how.replicas > 0
                           ? read_replicated_reply(r.reply, how.read, how.value, how.replicas, why)
                           : how.read(r.reply, how.value, why);
            o.code = why.code;
            o.detail = std::move(why.detail);
            // An ok reply followed by WAIT's is well-formed: its first element is the
            // command's own.
            const resp::reply& own = how.replicas > 0 && o.status == node_status::ok
                                         ? r.reply.elements.front()
                                         : r.reply;
            if (how.replies_with_token && o.status == node_status::ok && own.integer > 0) {
                o.fencing_token = static_cast<std::uint64_t>(own.integer);
            }
            return o.status;
        }
        case exec_result::outcome::timed_out:
            o.status = node_status::timed_out;
            break;
        case exec_result::outcome::failed:
            o.status = node_status::error;
            break;
        case exec_result::outcome::cancelled:
            o.status = node_status::abandoned;
            break;
    }
    o.code = r.code;
    o.detail = std::move(r.detail);
    return o.status;
}

}  // namespace redlock::detail
