// SPDX-License-Identifier: BSL-1.0
// The operations of a guard's lock: release, extend, valid and wait_lost.

#include <redlock/error.hpp>
#include <redlock/guard.hpp>

#include "core/spawn.hpp"
#include "lock/client_impl.hpp"
#include "lock/guard_op_fsm.hpp"
#include "lock/lock_events.hpp"
#include "lock/lock_rounds.hpp"
#include "lock/lock_state.hpp"
#include "lock/watchdog.hpp"
#include "protocol/scripts.hpp"
#include "quorum/quorum.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

using void_result = std::tuple<error_code>;
using bool_result = std::tuple<error_code, bool>;

// The lock as `op` finds it. A release takes the ownership first, whatever comes of it.
guard_facts facts_of(lock_state& l, guard_op op)
{
    return {.owns = op == guard_op::release ? l.owns.exchange(false) : l.owns.load(),
            .shut_down = l.mutex->client->shut_down,
            .lost = l.lost,
            .extensions = l.extensions,
            .until = l.until.load(),
            .now = clock::now()};
}

// The round `op` runs; an extension's validity counts from `start`.
round round_of(const lock_state& l, guard_op op, clock::time_point start)
{
    if (op == guard_op::release) {
        return handing_off(l);
    }
    if (op == guard_op::extend) {
        return extend_round(l, start);
    }
    const options& o = l.mutex->opts;
    request req = check_request(l.mutex->shape(), l.value);
    return round{.cmd = std::move(req.cmd),
                 .read = req.read,
                 .value = l.value,
                 .deadline = clock::now() + node_timeout(o.expiry, o.timeout_factor),
                 .rule = stop_rule::outcome_known,
                 .quorum = l.mutex->quorum,
                 .shuffle = o.shuffle_nodes};
}

// Does what an action says besides its step.
void carry_out(const std::shared_ptr<lock_state>& l, const guard_op_fsm::action& act)
{
    if (act.released) {
        note_released(*l);
    }
    if (act.extended) {
        l->until = act.until;
        l->extended_at = act.start;
        ++l->extensions;
        note_extended(l);  // the watch re-reads the validity
    }
    if (act.declare_lost) {
        declare_lost(*l);
    }
    if (act.watch) {
        start_watch(l);
        if (!l->lost_event) {
            l->lost_event = std::make_unique<asio::steady_timer>(l->mutex->client->strand,
                                                                 clock::time_point::max());
        }
    }
}

// One operation of a guard: does what its guard_op_fsm says. It begins as
// accept_cancellation() (spawn.hpp) does, inline, to save the frame of a nested coroutine.
// Release and extend have effects on the nodes that a cancellation cannot take back (deletes
// already sent go on; some nodes may have extended), so they accept terminal and partial
// cancellation only; valid and wait_lost change nothing and accept total cancellation as
// well.
template <guard_op Op>
asio::awaitable<std::conditional_t<Op == guard_op::valid, bool_result, void_result>> guard_op_run(
    std::shared_ptr<lock_state> l)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    if constexpr (Op == guard_op::release || Op == guard_op::extend) {
        co_await asio::this_coro::reset_cancellation_state(asio::enable_partial_cancellation());
    } else {
        co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    }
    auto cs = co_await asio::this_coro::cancellation_state;
    guard_op_fsm fsm(Op, extension_rules_for(l->mutex->opts));
    const guard_facts facts = facts_of(*l, Op);
    // An extension is a lock event when the guard held the lock (lock_events.hpp).
    [[maybe_unused]] const clock::time_point began =
        Op == guard_op::extend ? event_time(*l->mutex->client) : clock::time_point{};
    for (auto act = fsm.start(facts);;) {
        carry_out(l, act);
        switch (act.step) {
            case guard_step::run_round: {
                auto outcomes =
                    co_await run_round(l->mutex->client->connections, round_of(*l, Op, act.start));
                const tally t = keep_report(*l, std::move(outcomes));
                act = fsm.round_done({.answers = t,
                                      .cancelled = cancelled(cs),
                                      .now = clock::now(),
                                      .until = l->until.load(),
                                      .watched = l->watched});
                break;
            }
            case guard_step::wait_for_loss:
                co_await l->lost_event->async_wait(asio::as_tuple(use_awaitable));
                act = fsm.woken(l->lost, l->owns, cancelled(cs));
                break;
            case guard_step::complete:
                if constexpr (Op == guard_op::extend) {
                    if (facts.owns) {
                        emit_extension(*l, began, act.ec);
                    }
                }
                if constexpr (Op == guard_op::valid) {
                    co_return bool_result{act.ec, act.valid};
                } else {
                    co_return void_result{act.ec};
                }
        }
    }
}

// A guard that owns nothing has no lock to work on; its operations complete (posted, never
// inline) on the handler's executor, or else the guard's (a moved-from guard keeps its
// client's), or else, for a default-constructed guard, a system thread.
template <class... Ts>
void complete_without_lock(const asio::any_io_executor& guard_ex,
                           asio::any_completion_handler<void(error_code, Ts...)> h,
                           std::tuple<error_code, Ts...> result)
{
    const asio::any_io_executor fallback =
        guard_ex ? guard_ex : asio::any_io_executor(asio::system_executor());
    auto ex =
        asio::prefer(asio::get_associated_executor(h, fallback), asio::execution::blocking.never,
                     asio::execution::outstanding_work.tracked);
    ex.execute([h = std::move(h), result = std::move(result)]() mutable {
        std::apply([&h](auto&&... args) { std::move(h)(std::move(args)...); }, std::move(result));
    });
}

// Runs the operation `make_op` makes of a held lock on its client's strand; a guard that holds
// none completes with `none`.
template <class... Ts, class MakeOp>
void run_on_lock(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex,
                 asio::any_completion_handler<void(error_code, Ts...)> h,
                 std::tuple<error_code, Ts...> none, MakeOp make_op)
{
    if (!l) {
        return complete_without_lock(ex, std::move(h), std::move(none));
    }
    auto c = l->mutex->client;
    spawn_operation(c->strand, c->executor, make_op(std::move(l)), std::move(h));
}

}  // namespace

void initiate_release(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex,
                      void_handler h)
{
    run_on_lock(std::move(l), ex, std::move(h), void_result{error::not_held},
                guard_op_run<guard_op::release>);
}

void initiate_extend(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex, void_handler h)
{
    run_on_lock(std::move(l), ex, std::move(h), void_result{error::not_held},
                guard_op_run<guard_op::extend>);
}

void initiate_valid(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex, bool_handler h)
{
    run_on_lock(std::move(l), ex, std::move(h), bool_result{error::not_held, false},
                guard_op_run<guard_op::valid>);
}

void initiate_wait_lost(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex,
                        void_handler h)
{
    run_on_lock(std::move(l), ex, std::move(h), void_result{error::not_held},
                guard_op_run<guard_op::wait_lost>);
}

}  // namespace redlock::detail
