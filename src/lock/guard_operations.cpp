// SPDX-License-Identifier: BSL-1.0
// The operations of a guard's lock: release, extend, valid and wait_lost.

#include <redlock/error.hpp>
#include <redlock/guard.hpp>

#include "core/spawn.hpp"
#include "lock/client_impl.hpp"
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
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

// Each operation begins as accept_cancellation() (spawn.hpp) does, inline, to save the frame
// of a nested coroutine. Release and extend have effects on the nodes that a cancellation
// cannot take back (deletes already sent go on; some nodes may have extended), so they accept
// terminal and partial cancellation only; valid and wait_lost change nothing and accept total
// cancellation as well.

// Why a guard cannot run an extend or valid round, if it cannot.
error_code unusable(const std::shared_ptr<lock_state>& l)
{
    if (!l || !l->owns) {
        return error::not_held;
    }
    if (l->mutex->client->shut_down) {
        return error::shut_down;
    }
    return {};
}

using void_result = std::tuple<error_code>;

asio::awaitable<void_result> release_op(std::shared_ptr<lock_state> l)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_partial_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    if (!l || !l->owns.exchange(false)) {
        co_return void_result{error::not_held};
    }
    note_released(*l);
    auto outcomes = co_await run_round(l->mutex->client->connections, handing_off(*l));
    const tally t = keep_report(*l, std::move(outcomes));
    if (cancelled(cs)) {
        co_return void_result{asio::error::operation_aborted};
    }
    co_return void_result{t.reached() ? error_code{} : make_error_code(error::not_held)};
}

asio::awaitable<void_result> extend_op(std::shared_ptr<lock_state> l)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_partial_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    if (error_code ec = unusable(l)) {
        co_return void_result{ec};
    }
    const options& o = l->mutex->opts;
    if (l->lost) {
        co_return void_result{error::lost};
    }
    // The extension limit is a hard bound: manual extensions count against it too.
    if (o.auto_extend && o.auto_extend_limit > 0 && l->extensions >= o.auto_extend_limit) {
        co_return void_result{error::extend_failed};
    }
    const auto start = clock::now();
    if (start >= l->until.load()) {
        co_return void_result{error::expired};
    }
    auto outcomes = co_await run_round(l->mutex->client->connections, extend_round(*l, start));
    const tally t = keep_report(*l, std::move(outcomes));
    if (cancelled(cs)) {
        co_return void_result{asio::error::operation_aborted};
    }
    const auto now = clock::now();
    const auto until = valid_until(start, o.expiry, o.drift_factor);
    if (t.reached() && now < until) {
        l->until = until;
        l->extended_at = start;
        ++l->extensions;
        note_extended(l);  // the watch re-reads the validity
        co_return void_result{error_code{}};
    }
    if (l->watched && definitely_gone(t)) {
        declare_lost(*l);
    }
    co_return void_result{now >= l->until.load() ? error::expired : error::extend_failed};
}

using bool_result = std::tuple<error_code, bool>;

asio::awaitable<bool_result> valid_op(std::shared_ptr<lock_state> l)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    if (error_code ec = unusable(l)) {
        co_return bool_result{ec, false};
    }
    const options& o = l->mutex->opts;
    request req = check_request(l->mutex->shape(), l->value);
    round r{.cmd = std::move(req.cmd),
            .read = req.read,
            .value = l->value,
            .deadline = clock::now() + node_timeout(o.expiry, o.timeout_factor),
            .rule = stop_rule::outcome_known,
            .quorum = l->mutex->quorum,
            .shuffle = o.shuffle_nodes};
    auto outcomes = co_await run_round(l->mutex->client->connections, std::move(r));
    const tally t = keep_report(*l, std::move(outcomes));
    if (cancelled(cs)) {
        co_return bool_result{asio::error::operation_aborted, false};
    }
    co_return bool_result{error_code{}, t.reached()};
}

asio::awaitable<void_result> wait_lost_op(std::shared_ptr<lock_state> l)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    if (!l || !l->owns) {
        co_return void_result{error::not_held};
    }
    start_watch(l);
    if (!l->lost_event) {
        l->lost_event = std::make_unique<asio::steady_timer>(l->mutex->client->strand,
                                                             clock::time_point::max());
    }
    while (!l->lost && l->owns && !cancelled(cs)) {
        co_await l->lost_event->async_wait(asio::as_tuple(use_awaitable));
    }
    if (l->lost) {
        co_return void_result{error::lost};
    }
    co_return void_result{cancelled(cs) ? make_error_code(asio::error::operation_aborted)
                                        : make_error_code(error::not_held)};
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
    run_on_lock(std::move(l), ex, std::move(h), void_result{error::not_held}, release_op);
}

void initiate_extend(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex, void_handler h)
{
    run_on_lock(std::move(l), ex, std::move(h), void_result{error::not_held}, extend_op);
}

void initiate_valid(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex, bool_handler h)
{
    run_on_lock(std::move(l), ex, std::move(h), bool_result{error::not_held, false}, valid_op);
}

void initiate_wait_lost(std::shared_ptr<lock_state> l, const asio::any_io_executor& ex,
                        void_handler h)
{
    run_on_lock(std::move(l), ex, std::move(h), void_result{error::not_held}, wait_lost_op);
}

}  // namespace redlock::detail
