// SPDX-License-Identifier: BSL-1.0
// acquire and try_acquire: attempts on every node, retries, wake-ups by releases, hand-offs
// between the client's own acquires, and the fencing token's write-back.

#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include "core/spawn.hpp"
#include "lock/acquire_fsm.hpp"
#include "lock/client_impl.hpp"
#include "lock/lock_rounds.hpp"
#include "lock/lock_state.hpp"
#include "lock/owner_value.hpp"
#include "lock/waiters.hpp"
#include "lock/watchdog.hpp"
#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"
#include "protocol/scripts.hpp"
#include "quorum/quorum.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <tuple>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

guard failed_guard(const std::shared_ptr<mutex_state>& m, const report& rep)
{
    m->set_report(rep);
    auto l = std::make_shared<lock_state>();
    l->mutex = m;
    l->set_report(rep);
    return access::make<guard>(std::move(l));
}

// The message of a release that went out without it, published by the client itself on
// every node.
void announce_release(const client_impl& c, std::string_view key, std::string_view value)
{
    command cmd;
    const std::string channel = release_channel(c.cfg.key_prefix, key, c.in_cluster);
    resp::append_command(cmd.payload, {pubsub_for(c.in_cluster).publish, channel, value});
    cmd.slot = key_slot(channel);  // SPUBLISH goes to the channel's master on a cluster
    broadcast(c.connections, std::move(cmd));
}

// While an acquire waits to retry, a release of one of its keys may wake it: a release by
// this client hands the lock to its longest-waiting acquire at once, a release seen on a node
// wakes it unless another of the client's acquires is trying already (waiters.hpp).
class wake_on_release
{
  public:
    wake_on_release(client_impl& c, const std::vector<std::string>& keys, asio::steady_timer& timer)
        : client_(c), keys_(keys), waiter_(timer)
    {
    }
    wake_on_release(const wake_on_release&) = delete;
    wake_on_release& operator=(const wake_on_release&) = delete;
    ~wake_on_release()
    {
        if (watching_) {
            for (const std::string& key : keys_) {
                if (client_.waiters->leave(key, waiter_)) {
                    // Handed a release that went out quietly, and cancelled before its
                    // attempt, with nobody of this client to take its turn: the key will be
                    // free, so the other clients' waiters must hear of it after all.
                    announce_release(client_, key, waiter_.handed_value);
                    waiter_.held_writes.end();  // the message goes in the held write
                }
                for (const auto& s : client_.subscribers) {
                    s->unwatch(key);
                }
            }
        }
    }
    void start()
    {
        if (!watching_) {
            watching_ = true;
            for (const std::string& key : keys_) {
                client_.waiters->enter(key, waiter_);
                for (const auto& s : client_.subscribers) {
                    s->watch(key);
                }
            }
        }
    }
    /// Before a retry pause: whether a release came while the attempt was under way. Once
    /// in a row at most, so that releases seen during attempts cannot keep a waiter from
    /// ever pausing.
    bool missed_a_release()
    {
        const bool skip = waiter_.missed && !skipped_;
        waiter_.missed = false;
        skipped_ = skip;
        return skip;
    }
    /// Around the retry pause.
    void pausing(bool p) { waiter_.pausing = p && watching_; }
    /// The pause's wait ended because the client moved its end (a yield): wait again.
    bool rescheduled() { return std::exchange(waiter_.rescheduled, false); }
    /// The pause ended because another owner's release was seen on a node.
    bool woken_by_release_message() { return std::exchange(waiter_.by_release_message, false); }
    /// An attempt begins: a wake-up that led here has been used.
    void attempting() { waiter_.woken = false; }
    /// The hold on the nodes' writes taken for this attempt by a hand-off, if any: the
    /// attempt's round ends it.
    write_hold take_held_writes() { return std::move(waiter_.held_writes); }

  private:
    client_impl& client_;
    const std::vector<std::string>& keys_;
    waiter waiter_;
    bool watching_ = false;
    bool skipped_ = false;
};

std::uint64_t largest_token(const std::vector<node_outcome>& outcomes)
{
    std::uint64_t token = 0;
    for (const node_outcome& o : outcomes) {
        token = std::max(token, o.fencing_token);
    }
    return token;
}

// Raises the fencing counters of `m`'s keys to `token` on every node; true when a quorum
// confirmed it before `until`.
asio::awaitable<bool> write_back_token(const std::shared_ptr<client_impl>& c, const mutex_state& m,
                                       std::uint64_t token, clock::time_point until)
{
    const options& o = m.opts;
    request req = fence_raise_request(m.shape(), token);
    round r{.cmd = std::move(req.cmd),
            .read = req.read,
            .deadline = std::min(until, clock::now() + node_timeout(o.expiry, o.timeout_factor)),
            .rule = stop_rule::quorum_reached,
            .shuffle = o.shuffle_nodes};
    const tally t = count(co_await run_round(c->connections, std::move(r)));
    co_return t.reached() && clock::now() < until;
}

// The delete after a failed attempt, done once a quorum replied. A reentrant lock's count is
// shared by the acquires of one mutex: where this attempt was refused (another owner held the
// key), a count found there by the delete would be another acquire's of the same mutex, which
// got the key meanwhile, so those nodes are left alone. Elsewhere the delete follows the
// attempt on the same connection, so it undoes the attempt's own increment.
round clean_up_round(const mutex_state& m, std::string_view value, const report& attempt)
{
    round r = release_round(m, value, true, stop_rule::quorum_replied);
    if (m.opts.reentrant) {
        r.skip.resize(attempt.nodes.size());
        for (std::size_t i = 0; i < attempt.nodes.size(); ++i) {
            r.skip[i] = attempt.nodes[i].status == node_status::taken;
        }
        r.skip_detail = "not sent: the attempt was refused here, so it holds nothing to undo";
    }
    return r;
}

using guard_result = std::tuple<error_code, guard>;

asio::awaitable<guard_result> acquire_op(std::shared_ptr<mutex_state> m, bool single_attempt)
{
    // Cancellation is checked after each step, so that a cancelled attempt still cleans up.
    // As accept_cancellation() (spawn.hpp), inline, to save the frame of a nested coroutine.
    // Total cancellation too: a cancelled acquire takes back what it did (its clean-up).
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    const std::shared_ptr<client_impl>& c = m->client;
    const options& o = m->opts;
    if (c->shut_down) {
        co_return guard_result{error::shut_down, failed_guard(m, {})};
    }

    std::string value;
    try {
        // A reentrant lock's owner is the mutex (and its copies): one value for all of them.
        value = !m->owner.empty()  ? m->owner
                : !o.value.empty() ? o.value
                : o.gen_value      ? o.gen_value()
                                   : random_owner_value();
    } catch (const std::exception&) {
        co_return guard_result{error::invalid_argument, failed_guard(m, {})};
    }
    if (value.empty()) {
        co_return guard_result{error::invalid_argument, failed_guard(m, {})};
    }

    const auto started = clock::now();
    acquire_fsm fsm({.tries = single_attempt ? 1 : o.tries,
                     .give_up_at = o.wait ? started + *o.wait : clock::time_point::max(),
                     .wake_on_release = o.wake_on_release,
                     .reentrant = o.reentrant,
                     .fencing = o.fencing});
    const auto per_node = node_timeout(o.expiry, o.timeout_factor);
    asio::steady_timer pause(c->strand);
    wake_on_release wake(*c, m->keys, pause);
    report rep;
    // The current attempt's.
    clock::time_point start{};
    clock::time_point until{};
    std::uint64_t token = 0;

    // Does what the state machine says, and tells it what came of it.
    for (auto act = fsm.start(c->waiters->ours(m->keys));;) {
        if (act.watch_releases) {
            wake.start();  // from now on a release wakes the retry
        }
        switch (act.step) {
            case acquire_step::attempt: {
                wake.attempting();
                start = clock::now();
                request req = acquire_request(m->shape(), value, o.expiry);
                if (o.wait_for_replicas > 0) {
                    // Half the per-node deadline for the replicas, the rest for the round trip
                    // and the command itself.
                    add_replica_wait(
                        req.cmd, o.wait_for_replicas,
                        std::chrono::duration_cast<std::chrono::milliseconds>(per_node) / 2);
                }
                round r{.cmd = std::move(req.cmd),
                        .read = req.read,
                        .value = value,
                        .deadline = start + per_node,
                        .rule = o.fail_fast ? stop_rule::outcome_known : stop_rule::quorum_reached,
                        .shuffle = o.shuffle_nodes,
                        .replies_with_token = o.fencing,
                        .replicas = o.wait_for_replicas,
                        .ends_hold = wake.take_held_writes()};
                auto outcomes = co_await run_round(c->connections, std::move(r));
                const tally t = count(outcomes);
                until = valid_until(start, o.expiry, o.drift_factor);
                token = o.fencing ? largest_token(outcomes) : 0;
                rep = make_report(std::move(outcomes), fsm.attempt_number());
                act = fsm.attempted({.quorum_with_validity = t.reached() && clock::now() < until,
                                     .taken_by_other = t.taken_by_other(),
                                     .some_taken = t.taken > 0},
                                    cancelled(cs));
                break;
            }
            case acquire_step::write_back_token: {
                const bool confirmed = co_await write_back_token(c, *m, token, until);
                act = fsm.token_written(confirmed, cancelled(cs));
                break;
            }
            case acquire_step::grant: {
                auto l = std::make_shared<lock_state>();
                l->mutex = m;
                l->value = value;
                l->fencing_token = token;
                l->until = until;
                l->extended_at = start;
                l->owns = true;
                l->set_report(rep);
                if (o.auto_extend) {
                    start_watch(l);
                }
                m->set_report(rep);
                c->waiters->granted(m->keys, start);
                co_return guard_result{error_code{}, access::make<guard>(std::move(l))};
            }
            case acquire_step::clean_up:
                // Queued in the same turn as the attempt's timeouts, so that on a node that
                // stopped answering it follows the attempt's request on the same socket
                // (connection::gave_up). Done once a quorum replied: those nodes no longer
                // hold the value; the others' deletes go on in the background, even if the
                // caller cancels meanwhile.
                co_await run_round(c->connections, clean_up_round(*m, value, rep));
                c->waiters->attempt_failed(m->keys);
                act = fsm.cleaned_up(quorum_ruled_out(rep.nodes), cancelled(cs));
                break;
            case acquire_step::choose_delay:
                try {
                    const auto delay = o.retry_delay(act.attempt_number);
                    act = fsm.delay_chosen(delay, clock::now());
                } catch (const std::exception&) {
                    act = fsm.delay_failed();
                }
                break;
            case acquire_step::pause: {
                bool after_release = wake.missed_a_release();
                if (!after_release) {
                    pause.expires_after(act.delay);
                    wake.pausing(true);
                    co_await pause.async_wait(asio::as_tuple(use_awaitable));
                    while (wake.rescheduled()) {
                        co_await pause.async_wait(asio::as_tuple(use_awaitable));
                    }
                    wake.pausing(false);
                    after_release = wake.woken_by_release_message();
                }
                if (after_release && !cancelled(cs)) {
                    // Other clients' waiters heard of the same release: see
                    // release_wake_spread.
                    pause.expires_after(random_release_wake_delay());
                    co_await pause.async_wait(asio::as_tuple(use_awaitable));
                }
                act = fsm.paused(cancelled(cs));
                break;
            }
            case acquire_step::complete:
                co_return guard_result{act.ec, failed_guard(m, rep)};
        }
    }
}

}  // namespace

void initiate_acquire(std::shared_ptr<mutex_state> m, bool single_attempt, guard_handler h)
{
    auto c = m->client;
    spawn_operation(c->strand, c->executor, acquire_op(std::move(m), single_attempt), std::move(h));
}

}  // namespace redlock::detail
