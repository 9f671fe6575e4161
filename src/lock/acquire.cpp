// SPDX-License-Identifier: BSL-1.0
// acquire and try_acquire: attempts on every node, retries, wake-ups by releases, hand-offs
// between the client's own acquires, and the fencing token's write-back.

#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include "core/spawn.hpp"
#include "lock/acquire.hpp"
#include "lock/acquire_fsm.hpp"
#include "lock/client_impl.hpp"
#include "lock/fair_queue_fsm.hpp"
#include "lock/lock_events.hpp"
#include "lock/lock_rounds.hpp"
#include "lock/lock_state.hpp"
#include "lock/owner_value.hpp"
#include "lock/rw_rules.hpp"
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
#include <optional>
#include <tuple>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

guard failed_guard(const std::shared_ptr<mutex_state>& m, const report& rep)
{
    const stored_report compact(rep);
    m->set_report(compact);
    auto l = std::make_shared<lock_state>();
    l->mutex = m;
    l->set_report(compact);
    return access::make<guard>(std::move(l));
}

using guard_result = std::tuple<error_code, guard>;

// An acquire that ends before its first attempt.
guard_result refused(const std::shared_ptr<mutex_state>& m, error ec)
{
    emit(*m, lock_event_kind::acquire_failed, event_time(*m->client), 0, ec);
    return {ec, failed_guard(m, {})};
}

// The message of a release that went out without it, published by the client itself on
// every node.
void announce_release(const client_impl& c, std::string_view key, std::string_view value)
{
    command cmd;
    const std::string channel = release_channel(c.cfg.key_prefix, key, c.in_cluster);
    const std::string_view publish = pubsub_for(c.in_cluster).publish;
    resp::append_command(cmd.payload, {publish, channel, value});
    // SPUBLISH goes to the channel's master on a cluster.
    cmd.key_at = static_cast<std::uint32_t>(resp::first_argument_at(3, publish));
    broadcast(c.connections, std::move(cmd));
}

// An acquire's place in the client's lines of waiters for its keys (waiters.hpp), from the
// moment its acquire_fsm says that a release may wake it until it completes. While it is
// there, the subscribers listen for the keys' releases.
class line_place
{
  public:
    /// `turn_value`: the owner value of an acquire that waits in a queue, which only a message
    /// naming it wakes; empty for any other. `rule`: the lock's, which says what a release
    /// may let in.
    /// `registered`: the acquire's client registers on the nodes as waiting for the key
    /// (`mutex_state::waiter_tag`), so that a release may name it alone.
    line_place(client_impl& c, const std::vector<std::string>& keys, asio::steady_timer& pause,
               std::string_view turn_value, wake_rule rule, bool registered)
        : client_(c), keys_(keys), turn_value_(turn_value), waiter_(pause, rule)
    {
        // A queued waiter's messages come on its client's own channel only; a registered
        // waiter's come there when a release names its client, and on the key's channel when
        // a release finds nobody registered to name.
        if (turn_value.empty()) {
            channel_suffixes_.emplace_back();
        }
        if (!turn_value.empty() || registered) {
            channel_suffixes_.push_back(client_channel_suffix(c.channel_tag));
        }
    }
    line_place(const line_place&) = delete;
    line_place& operator=(const line_place&) = delete;
    ~line_place();

    void join();
    waiter& self() noexcept { return waiter_; }

  private:
    client_impl& client_;
    const std::vector<std::string>& keys_;
    std::string_view turn_value_;
    std::vector<std::string> channel_suffixes_;
    waiter waiter_;
    bool joined_ = false;
};

void line_place::join()
{
    if (std::exchange(joined_, true)) {
        return;
    }
    for (const std::string& key : keys_) {
        client_.waiters->enter(key, waiter_, turn_value_);
        for (const auto& s : client_.subscribers) {
            for (const std::string& suffix : channel_suffixes_) {
                s->watch(key, suffix);
            }
        }
    }
}

line_place::~line_place()
{
    if (!joined_) {
        return;
    }
    for (const std::string& key : keys_) {
        if (client_.waiters->leave(key, waiter_)) {
            // Handed a release that went out quietly, and gone before its attempt, with
            // nobody of this client to take its turn: the key will be free, so the other
            // clients' waiters must hear of it after all.
            announce_release(client_, key, waiter_.handed_value);
            waiter_.held_writes.end();  // the message goes in the held write
        }
        for (const auto& s : client_.subscribers) {
            for (const std::string& suffix : channel_suffixes_) {
                s->unwatch(key, suffix);
            }
        }
    }
}

std::uint64_t largest_token(const std::vector<node_outcome>& outcomes)
{
    std::uint64_t token = 0;
    for (const node_outcome& o : outcomes) {
        token = std::max(token, o.fencing_token);
    }
    return token;
}

// The delete after a failed attempt, done once a quorum replied. For a kind whose refusals
// write nothing (the lock's row), it is not sent where the attempt was refused: the attempt
// left nothing there to undo. Beyond the request saved, this matters to a reentrant lock,
// whose count is shared by the acquires of one mutex: a count found there by the delete would
// be another acquire's of the same mutex, which got the key meanwhile. Elsewhere the delete
// follows the attempt on the same connection, so it undoes the attempt's own write.
round clean_up_round(const mutex_state& m, std::string_view value, const report& attempt)
{
    // A writer that waits keeps its intent between attempts, so that new readers stay out
    // meanwhile; it is withdrawn when the acquire ends (`acquisition::giving_up_round`).
    round r = background_round(m, value, clean_up_request(m.shape(), {.value = value}),
                               stop_rule::quorum_replied);
    if (m.rules->refusal_writes_nothing) {
        r.skip.resize(attempt.nodes.size());
        for (std::size_t i = 0; i < attempt.nodes.size(); ++i) {
            r.skip[i] = attempt.nodes[i].status == node_status::taken;
        }
        r.skip_detail = "not sent: the attempt was refused here, so it holds nothing to undo";
    }
    return r;
}

// The owner value of one acquisition; empty if the user's generator failed. A reentrant
// lock's owner is the mutex (and its copies): one value for all of them.
std::string owner_value_for(const mutex_state& m)
{
    const options& o = m.opts;
    try {
        return !m.owner.empty()   ? m.owner
               : !o.value.empty() ? o.value
               : o.gen_value      ? o.gen_value()
                                  : random_owner_value();
    } catch (const std::exception&) {
        return {};
    }
}

// One acquire: the I/O of each step its acquire_fsm decides, and what came of it. Every
// attempt goes to all nodes with a per-node timeout; the lock is held once a quorum accepted
// it with validity left (and, fenced, a quorum raised its counters to the token); a failed
// attempt is deleted everywhere, then retried after a random delay that a release may cut
// short. Cancellation is checked after each step, so that a cancelled attempt still cleans
// up.
class acquisition
{
  public:
    acquisition(std::shared_ptr<mutex_state> m, std::string value, bool single_attempt,
                asio::cancellation_state cs);

    const std::vector<std::shared_ptr<node_link>>& nodes() const { return c_.connections; }

    acquire_fsm::action start();
    round join_round() const;
    acquire_fsm::action joined(std::vector<node_outcome> outcomes);
    round attempt_round();
    acquire_fsm::action attempted(std::vector<node_outcome> outcomes);
    round token_round() const;
    acquire_fsm::action token_written(const std::vector<node_outcome>& outcomes);
    guard_result grant();
    // Queued in the same turn as the attempt's timeouts, so that on a node that stopped
    // answering it follows the attempt's request on the same socket (connection::gave_up).
    // Done once a quorum replied: those nodes no longer hold the value; the others' deletes
    // go on in the background, even if the caller cancels meanwhile.
    round clean_up_round();
    acquire_fsm::action cleaned_up();
    // What an acquire that gives up leaves behind goes, and the next waiter is told: a fair
    // acquire's queue entry (with the key, where its attempt set it), a writer's intent where
    // readers refused it. Done once a quorum replied, the rest in the background, as a
    // clean-up.
    round giving_up_round() const
    {
        return release_round(*m_, value_, true, stop_rule::quorum_replied);
    }
    acquire_fsm::action left() const { return fsm_.left(); }
    acquire_fsm::action delay_chosen(int attempt_number);
    asio::awaitable<acquire_fsm::action> retry_pause(std::chrono::milliseconds delay);
    // A writer's attempts may have left its intent on nodes where readers refused it.
    bool intent_left() const { return intent_left_; }
    // The acquire registered its client as waiting (its first clean-up did), and ends without
    // the lock as the client's last waiter of the key: the client leaves the registry, so that
    // no release names it and no entry of it stays behind.
    bool leaves_registry() const
    {
        return registers(single_attempt_) && c_.waiters->waiting(m_->keys.front()) <= 1;
    }
    round leaving_registry_round() const
    {
        return background_round(*m_, value_, leave_registry_request(m_->shape()),
                                stop_rule::quorum_replied);
    }
    asio::awaitable<acquire_fsm::action> turn_wait(std::chrono::milliseconds delay);
    acquire_fsm::action handed_over();
    guard_result failed(error_code ec) const
    {
        if (ec == error::taken) {
            ec = m_->rules->busy;  // as the kind reports a lock others hold
        }
        emit(*m_, lock_event_kind::acquire_failed, began_, fsm_.attempt_number(), ec);
        return {ec, failed_guard(m_, rep_)};
    }

  private:
    bool cancelled() const { return detail::cancelled(cs_); }
    // Whether its client registers as waiting on the nodes (`mutex_state::waiter_tag`): only
    // an acquire that may wait.
    bool registers(bool single_attempt) const
    {
        return !m_->waiter_tag.empty() && !single_attempt && o_.tries > 1;
    }
    // The intent a writer's attempt asks for: none for a single attempt, nor for the last of
    // its tries. It must outlast the pause after the attempt, so that pause's delay is drawn
    // now.
    std::chrono::milliseconds intent_for_attempt();
    // From the action on which the machine says so, a release may wake this acquire.
    acquire_fsm::action follow(acquire_fsm::action act);

    std::shared_ptr<mutex_state> m_;
    client_impl& c_;
    const options& o_;
    std::string value_;
    asio::cancellation_state cs_;
    asio::steady_timer pause_;
    line_place place_;
    // For a lock that waits in a queue (its row's `waits`): its place there, which counts
    // hand-offs in the waiter's tally. Before `fsm_`, which asks it.
    std::optional<fair_queue_fsm> queue_;
    acquire_fsm fsm_;
    report rep_;
    // The current attempt's.
    clock::time_point start_{};
    clock::time_point until_{};
    std::uint64_t token_ = 0;
    const bool single_attempt_;
    std::optional<std::chrono::milliseconds> planned_delay_;
    bool intent_left_ = false;
    // The acquire's start, read only for the lock events (lock_events.hpp).
    const clock::time_point began_;
};

bool waits_in_queue(const mutex_state& m)
{
    return m.rules->waits == waiting::queue;
}

std::optional<fair_queue_fsm> queue_place_of(const mutex_state& m, bool single_attempt,
                                             hand_off_tally& hand_offs)
{
    if (!waits_in_queue(m)) {
        return std::nullopt;
    }
    const options& o = m.opts;
    return fair_queue_fsm({.joins = !single_attempt && o.tries > 1,
                           .timing = fair_timing_for(o.expiry),
                           .takes_hand_offs = !o.fencing && o.wait_for_replicas == 0,
                           .nodes = m.client->connections.size(),
                           .quorum = m.quorum},
                          hand_offs);
}

acquisition::acquisition(std::shared_ptr<mutex_state> m, std::string value, bool single_attempt,
                         asio::cancellation_state cs)
    : m_(std::move(m)),
      c_(*m_->client),
      o_(m_->opts),
      value_(std::move(value)),
      cs_(cs),
      pause_(c_.strand),
      place_(c_, m_->keys, pause_, waits_in_queue(*m_) ? std::string_view(value_) : "",
             m_->rules->wakes, registers(single_attempt)),
      queue_(queue_place_of(*m_, single_attempt, place_.self().hand_offs)),
      fsm_({.tries = single_attempt ? 1 : o_.tries,
            .registers_after = registers(single_attempt) ? 1 : 0,
            .give_up_at = o_.wait ? clock::now() + *o_.wait : clock::time_point::max(),
            .wake_on_release = o_.wake_on_release,
            .reentrant = o_.reentrant,
            .fencing = o_.fencing,
            .refusal_writes_nothing = m_->rules->refusal_writes_nothing},
           queue_ ? &*queue_ : nullptr),
      single_attempt_(single_attempt),
      began_(event_time(c_))
{
}

acquire_fsm::action acquisition::follow(acquire_fsm::action act)
{
    if (act.watch_releases) {
        place_.join();
    }
    return act;
}

acquire_fsm::action acquisition::start()
{
    // Only a lock that the client's acquires pass between them can be the client's own (a
    // semaphore's other permits may be free while this client holds one).
    const bool own = m_->rules->hands_off_in_client;
    return follow(
        fsm_.start((own && c_.waiters->ours(m_->keys)) || c_.waiters->taking_a_release(m_->keys)));
}

// Phase 1 of the ticket: a proposal from every node; with one node it is the ticket.
round acquisition::join_round() const
{
    request req =
        join_request(m_->shape(), value_, queue_->entry_ttl(), nodes().size() == 1, c_.channel_tag);
    return round{.cmd = std::move(req.cmd),
                 .read = req.read,
                 .value = value_,
                 .deadline = clock::now() + node_timeout(o_.expiry, o_.timeout_factor),
                 .rule = stop_rule::quorum_reached,
                 .quorum = m_->quorum,
                 .shuffle = o_.shuffle_nodes,
                 .replies_with_token = true};
}

acquire_fsm::action acquisition::joined(std::vector<node_outcome> outcomes)
{
    const bool agreed = queue_->joined(outcomes);
    const bool ruled_out = quorum_ruled_out(outcomes, m_->quorum);
    rep_ = make_report(std::move(outcomes), fsm_.attempt_number());
    return follow(fsm_.joined(agreed, ruled_out, cancelled()));
}

round acquisition::attempt_round()
{
    attempt_args args{.value = value_, .expiry = o_.expiry, .intent = intent_for_attempt()};
    if (queue_) {
        // Phase 2 of the ticket (again with each attempt, which refreshes the entry).
        queue_->attempt_begins();
        args.ticket = queue_->ticket();
        args.entry_ttl = queue_->entry_ttl();
        args.channel_tag = c_.channel_tag;
    } else if (const std::uint64_t since = c_.waiters->since(m_->keys.front());
               registers(single_attempt_) && fsm_.attempt_number() > 1 && since != 0) {
        // A retry of an acquire in the client's line: it keeps the client's registration
        // (the first attempt's clean-up made it). Not the first attempt, which stays a plain
        // SET NX: most find the key free.
        args.waiting_since = since;
        args.entry_ttl = o_.expiry;
    }
    start_ = clock::now();
    const auto per_node = node_timeout(o_.expiry, o_.timeout_factor);
    request req = acquire_request(m_->shape(), args);
    if (o_.wait_for_replicas > 0) {
        // Half the per-node deadline for the replicas, the rest for the round trip and the
        // command itself.
        add_replica_wait(req.cmd, o_.wait_for_replicas,
                         std::chrono::duration_cast<std::chrono::milliseconds>(per_node) / 2);
    }
    return round{.cmd = std::move(req.cmd),
                 .read = req.read,
                 .value = value_,
                 .deadline = start_ + per_node,
                 .rule = o_.fail_fast ? stop_rule::outcome_known : stop_rule::quorum_reached,
                 .quorum = m_->quorum,
                 .shuffle = o_.shuffle_nodes,
                 .replies_with_token = o_.fencing,
                 .replicas = o_.wait_for_replicas,
                 .ends_hold = place_.self().attempt_begins()};
}

std::chrono::milliseconds acquisition::intent_for_attempt()
{
    if (!m_->rules->writer_intent || single_attempt_ || fsm_.attempt_number() >= o_.tries) {
        return {};
    }
    try {
        planned_delay_ = o_.retry_delay(fsm_.attempt_number());
    } catch (const std::exception&) {
        planned_delay_.reset();  // delay_chosen asks again, and fails the acquire
    }
    intent_left_ = true;
    return writer_intent_expiry(planned_delay_.value_or(std::chrono::milliseconds(0)),
                                node_timeout(o_.expiry, o_.timeout_factor));
}

acquire_fsm::action acquisition::attempted(std::vector<node_outcome> outcomes)
{
    const tally t = count(outcomes, m_->quorum);
    until_ = valid_until(start_, o_.expiry, o_.drift_factor);
    token_ = o_.fencing ? largest_token(outcomes) : 0;
    const bool mismatch = std::any_of(outcomes.begin(), outcomes.end(), [](const node_outcome& o) {
        return o.code == node_errc::permits_mismatch;
    });
    rep_ = make_report(std::move(outcomes), fsm_.attempt_number());
    const bool taken = m_->rules->taken(t);
    return follow(fsm_.attempted({.quorum_with_validity = t.reached() && clock::now() < until_,
                                  .taken_by_other = taken,
                                  .some_taken = t.taken > 0,
                                  .refused_everywhere = t.taken == t.nodes,
                                  .invalid_use = mismatch},
                                 cancelled()));
}

// Raises the fencing counters of the keys to the attempt's token on every node.
round acquisition::token_round() const
{
    request req = fence_raise_request(m_->shape(), token_);
    return round{
        .cmd = std::move(req.cmd),
        .read = req.read,
        .deadline = std::min(until_, clock::now() + node_timeout(o_.expiry, o_.timeout_factor)),
        .rule = stop_rule::quorum_reached,
        .quorum = m_->quorum,
        .shuffle = o_.shuffle_nodes};
}

acquire_fsm::action acquisition::token_written(const std::vector<node_outcome>& outcomes)
{
    const bool confirmed = count(outcomes, m_->quorum).reached() && clock::now() < until_;
    return follow(fsm_.token_written(confirmed, cancelled()));
}

guard_result acquisition::grant()
{
    auto l = std::make_shared<lock_state>();
    l->mutex = m_;
    l->value = value_;
    l->fencing_token = token_;
    l->until = until_;
    l->extended_at = start_;
    l->owns = true;
    // The guard and the mutex keep the same report: compacted once.
    const stored_report compact(rep_);
    l->set_report(compact);
    emit_acquired(*l, began_, fsm_.attempt_number());
    if (o_.auto_extend) {
        start_watch(l);
    }
    m_->set_report(compact);
    if (!queue_) {  // the queue decides who comes next, not the client's line
        c_.waiters->granted(m_->keys, start_);
    }
    return {error_code{}, access::make<guard>(std::move(l))};
}

round acquisition::clean_up_round()
{
    if (registers(single_attempt_) && fsm_.attempt_number() == 1) {
        // Sent to every node, refused or not: it also registers the client as waiting. The
        // acquire joins the client's line first (it listens from now on), which says since
        // when the client waits.
        place_.join();
        const clean_up_args args{.value = value_,
                                 .entry_ttl = o_.expiry,
                                 .waiting_since = c_.waiters->since(m_->keys.front())};
        return background_round(*m_, value_, clean_up_request(m_->shape(), args),
                                stop_rule::quorum_replied);
    }
    if (!queue_) {
        return detail::clean_up_round(*m_, value_, rep_);
    }
    // The attempt's entry keeps its place in the queue for the next attempt, and from here
    // until that attempt a release may hand it the key (docs/safety.md).
    const clean_up_args args{
        .value = value_,
        .hand_off_stamp = queue_->clean_up_sent(fsm_.attempt_number(), clock::now()),
        .entry_ttl = queue_->entry_ttl(),
        .channel_tag = c_.channel_tag};
    return background_round(*m_, value_, clean_up_request(m_->shape(), args),
                            stop_rule::quorum_replied);
}

acquire_fsm::action acquisition::cleaned_up()
{
    c_.waiters->attempt_failed(m_->keys);
    return follow(
        fsm_.cleaned_up(quorum_ruled_out(rep_.nodes, m_->quorum), cancelled(), clock::now()));
}

acquire_fsm::action acquisition::delay_chosen(int attempt_number)
{
    std::chrono::milliseconds delay{};
    try {
        delay = planned_delay_ ? *std::exchange(planned_delay_, std::nullopt)
                               : o_.retry_delay(attempt_number);
    } catch (const std::exception&) {
        return follow(fsm_.delay_failed());
    }
    return follow(fsm_.delay_chosen(delay, clock::now()));
}

// Skipped once after a release seen during the attempt; ended early by a release of one of
// the keys (waiters.hpp).
asio::awaitable<acquire_fsm::action> acquisition::retry_pause(std::chrono::milliseconds delay)
{
    waiter& w = place_.self();
    if (queue_) {
        co_return co_await turn_wait(delay);
    }
    w.on(waiter_event::pause_begins);
    if (w.state() == waiter_state::pausing) {
        pause_.expires_after(delay);
        do {
            co_await pause_.async_wait(asio::as_tuple(use_awaitable));
            w.on(waiter_event::pause_ends);
        } while (w.state() == waiter_state::pausing);  // its end was moved: wait on
    }
    if (follows_release_message(w.state()) && !w.woken_alone && !cancelled()) {
        // Other clients' waiters heard of the same release: see release_wake_spread.
        pause_.expires_after(random_release_wake_delay());
        co_await pause_.async_wait(asio::as_tuple(use_awaitable));
    }
    co_return follow(fsm_.paused(cancelled()));
}

// A queued waiter's pause: until a message names it as the head, or for `delay` (its refresh
// period, or the retry delay after a failure of another kind); skipped once if it was named
// during its attempt. Only the head is named, so its attempt follows at once.
asio::awaitable<acquire_fsm::action> acquisition::turn_wait(std::chrono::milliseconds delay)
{
    waiter& w = place_.self();
    w.on(waiter_event::turn_wait_begins);
    if (w.state() == waiter_state::queued) {
        // A quorum may have handed it the key already, during its clean-up: a waiter that was
        // retrying at once is not woken by that (it only notes a naming), and would otherwise
        // sit out its whole refresh period holding the lock.
        if (!queue_->handed_over()) {
            pause_.expires_after(delay);
            co_await pause_.async_wait(asio::as_tuple(use_awaitable));
        }
        w.on(waiter_event::pause_ends);
    }
    if (queue_->handed_over()) {
        co_return handed_over();
    }
    co_return follow(fsm_.paused(cancelled()));
}

// A quorum of nodes handed this waiter the key since its last clean-up: the lock's validity
// counts from that clean-up's sending (`fair_queue_fsm::handed_validity`).
acquire_fsm::action acquisition::handed_over()
{
    const hand_off_validity v = queue_->handed_validity(o_.drift_factor);
    start_ = v.start;
    until_ = v.until;
    token_ = 0;
    std::vector<node_outcome> outcomes(nodes().size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        if (queue_->handed_by()[i]) {
            outcomes[i].status = node_status::ok;
        } else {
            outcomes[i].code = node_errc::decided_by_quorum;  // the others handed it over
        }
    }
    rep_ = make_report(std::move(outcomes), fsm_.attempt_number());
    return follow(fsm_.handed_over(clock::now() < until_, cancelled()));
}

}  // namespace

asio::awaitable<guard_result> acquire_op(std::shared_ptr<mutex_state> m, bool single_attempt)
{
    // As accept_cancellation() (spawn.hpp), inline, to save the frame of a nested coroutine.
    // Total cancellation too: a cancelled acquire takes back what it did (its clean-up).
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    if (m->client->shut_down) {
        co_return refused(m, error::shut_down);
    }
    std::string value = owner_value_for(*m);
    if (value.empty()) {
        co_return refused(m, error::invalid_argument);
    }
    acquisition a(std::move(m), std::move(value), single_attempt, cs);
    // Does what the state machine says, and tells it what came of it.
    for (auto act = a.start();;) {
        switch (act.step) {
            case acquire_step::join: {
                auto outcomes = co_await run_round(a.nodes(), a.join_round());
                act = a.joined(std::move(outcomes));
                break;
            }
            case acquire_step::attempt: {
                auto outcomes = co_await run_round(a.nodes(), a.attempt_round());
                act = a.attempted(std::move(outcomes));
                break;
            }
            case acquire_step::write_back_token: {
                auto outcomes = co_await run_round(a.nodes(), a.token_round());
                act = a.token_written(outcomes);
                break;
            }
            case acquire_step::grant:
                co_return a.grant();
            case acquire_step::clean_up:
                if (!act.nothing_set) {
                    co_await run_round(a.nodes(), a.clean_up_round());
                }
                act = a.cleaned_up();
                break;
            case acquire_step::choose_delay:
                act = a.delay_chosen(act.attempt_number);
                break;
            case acquire_step::pause:
                act = co_await a.retry_pause(act.delay);
                break;
            case acquire_step::leave:
                co_await run_round(a.nodes(), a.giving_up_round());
                act = a.left();
                break;
            case acquire_step::complete:
                if (a.intent_left()) {
                    co_await run_round(a.nodes(), a.giving_up_round());
                }
                if (a.leaves_registry()) {
                    co_await run_round(a.nodes(), a.leaving_registry_round());
                }
                co_return a.failed(act.ec);
        }
    }
}

void initiate_acquire(std::shared_ptr<mutex_state> m, bool single_attempt, guard_handler h)
{
    auto c = m->client;
    spawn_operation(c->strand, c->executor, acquire_op(std::move(m), single_attempt), std::move(h));
}

}  // namespace redlock::detail
