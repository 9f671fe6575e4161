// SPDX-License-Identifier: BSL-1.0
#include "lock/guard_op_fsm.hpp"

#include <redlock/options.hpp>

#include <boost/asio/error.hpp>

namespace redlock::detail {

namespace {

// What refuses an operation before it sends anything: no lock, a closed client, and, where
// `lost_counts`, a lock whose loss was already found (a lost lock stays lost).
error_code refusal(const guard_facts& f, bool lost_counts) noexcept
{
    if (!f.owns) {
        return error::not_held;
    }
    if (f.shut_down) {
        return error::shut_down;
    }
    if (lost_counts && f.lost) {
        return error::lost;
    }
    return {};
}

}  // namespace

extension_rules extension_rules_for(const redlock::options& o) noexcept
{
    return {.expiry = o.expiry,
            .drift_factor = o.drift_factor,
            .auto_extend = o.auto_extend,
            .extend_limit = o.auto_extend_limit};
}

bool definitely_gone(const tally& t) noexcept
{
    return t.taken + t.missing > t.nodes - t.quorum();
}

extension_verdict judge_extension(const tally& t, clock::time_point now,
                                  clock::time_point until) noexcept
{
    if (t.reached() && now < until) {
        return extension_verdict::confirmed;
    }
    return definitely_gone(t) ? extension_verdict::gone : extension_verdict::failed;
}

guard_op_fsm::action guard_op_fsm::complete(error_code ec) noexcept
{
    return action{.step = guard_step::complete, .ec = ec};
}

guard_op_fsm::action guard_op_fsm::start(const guard_facts& f) noexcept
{
    if (op_ == guard_op::release) {
        return start_release(f);
    }
    // Extend and wait_lost also refuse a lock whose loss was found: a lost lock stays lost.
    if (const error_code ec = refusal(f, op_ != guard_op::valid)) {
        return complete(ec);
    }
    if (op_ == guard_op::extend) {
        return start_extend(f);
    }
    return op_ == guard_op::wait_lost ? action{.step = guard_step::wait_for_loss, .watch = true}
                                      : action{.step = guard_step::run_round};
}

guard_op_fsm::action guard_op_fsm::start_release(const guard_facts& f) const noexcept
{
    if (!f.owns) {
        return complete(error::not_held);
    }
    // The guard owns nothing from here on, whatever the outcome. After a shutdown the
    // connections are closed (or closing): nothing is sent, and the keys expire by their TTL.
    action next = f.shut_down ? complete(error::shut_down) : action{.step = guard_step::run_round};
    next.released = true;
    return next;
}

guard_op_fsm::action guard_op_fsm::start_extend(const guard_facts& f) noexcept
{
    // The extension limit is a hard bound: manual extensions count against it too.
    if (rules_.limit_reached(f.extensions)) {
        return complete(error::extend_failed);
    }
    if (f.now >= f.until) {
        return complete(error::expired);
    }
    start_ = f.now;
    return action{.step = guard_step::run_round, .start = start_};
}

guard_op_fsm::action guard_op_fsm::round_done(const round_result& r) const noexcept
{
    if (r.cancelled) {
        return complete(boost::asio::error::operation_aborted);
    }
    switch (op_) {
        case guard_op::release:
            return complete(r.answers.reached() ? error_code{} : make_error_code(error::not_held));
        case guard_op::valid: {
            // Node failures count as "not held"; the report tells them.
            action done = complete({});
            done.valid = r.answers.reached();
            return done;
        }
        case guard_op::extend:
            return extend_done(r);
        case guard_op::wait_lost:
            break;
    }
    return complete(error::not_held);  // wait_lost runs no round
}

guard_op_fsm::action guard_op_fsm::extend_done(const round_result& r) const noexcept
{
    const auto until = rules_.until_after(start_);
    const extension_verdict v = judge_extension(r.answers, r.now, until);
    if (v == extension_verdict::confirmed) {
        action done = complete({});
        done.extended = true;
        done.start = start_;
        done.until = until;
        return done;
    }
    // Only a watched lock is declared lost: nobody else would hear of it.
    action failed = complete(r.now >= r.until ? error::expired : error::extend_failed);
    failed.declare_lost = r.watched && v == extension_verdict::gone;
    return failed;
}

guard_op_fsm::action guard_op_fsm::woken(bool lost, bool owns, bool cancelled) const noexcept
{
    if (lost) {
        return complete(error::lost);
    }
    if (cancelled) {
        return complete(boost::asio::error::operation_aborted);
    }
    if (!owns) {
        return complete(error::not_held);
    }
    return action{.step = guard_step::wait_for_loss};  // woken for nothing: wait on
}

}  // namespace redlock::detail
