// The lock operations: acquire, release, extend and valid, as coroutines on the client's
// strand, started from the public templates through type-erased handlers.

#include <redlock/client.hpp>
#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include "detail/misconfiguration.hpp"
#include "detail/owner_value.hpp"
#include "detail/quorum.hpp"
#include "detail/scripts.hpp"
#include "detail/spawn.hpp"
#include "detail/state.hpp"
#include "detail/strand.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <tuple>
#include <utility>

namespace redlock {
namespace detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

template <class... Ts>
void spawn_operation(const std::shared_ptr<client_impl>& c,
                     asio::awaitable<std::tuple<error_code, Ts...>> op,
                     asio::any_completion_handler<void(error_code, Ts...)> h)
{
    detail::spawn_operation(c->strand, c->executor, std::move(op), std::move(h));
}

report make_report(std::vector<node_outcome> outcomes, int attempts)
{
    report r;
    r.nodes = std::move(outcomes);
    r.attempts = attempts;
    return r;
}

// Deletes (or, reentrant, decrements) `m`'s keys where they hold `value`. The round
// completes once `rule` decides; the deletes still pending then go on in the background, so
// that a stopped node delays neither the caller nor the next attempt (each connection runs
// its requests in order, so an attempt queued later cannot overtake them).
round release_round(const mutex_state& m, std::string_view value, bool announce, stop_rule rule)
{
    const options& o = m.opts;
    request req = release_request(m.shape(), value, announce);
    return round{.cmd = std::move(req.cmd),
                 .read = req.read,
                 .value = std::string(value),
                 .deadline = clock::now() + node_timeout(o.expiry, o.timeout_factor),
                 .rule = rule,
                 .background = m.client->background};
}

guard failed_guard(const std::shared_ptr<mutex_state>& m, const report& rep)
{
    m->set_report(rep);
    auto l = std::make_shared<lock_state>();
    l->mutex = m;
    l->set_report(rep);
    return guard(std::move(l));
}

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

// Runs a round for one of a guard's operations and keeps its report on the guard.
asio::awaitable<tally> run_guard_round(const std::shared_ptr<lock_state>& l, round r)
{
    auto outcomes = co_await run_round(l->mutex->client->nodes, std::move(r));
    const tally t = count(outcomes);
    l->set_report(make_report(std::move(outcomes), 1));
    co_return t;
}

round extend_round(const lock_state& l, clock::time_point start)
{
    const options& o = l.mutex->opts;
    request req = extend_request(l.mutex->shape(), l.value, o.expiry, o.set_nx_on_extend);
    return round{.cmd = std::move(req.cmd),
                 .read = req.read,
                 .value = l.value,
                 .deadline = start + node_timeout(o.expiry, o.timeout_factor),
                 .rule = stop_rule::quorum_reached,
                 .shuffle = o.shuffle_nodes};
}

// Our value is provably gone from a majority: nodes answered that the key is missing or
// another's, so no quorum can hold it whatever the silent nodes say.
bool definitely_gone(const tally& t)
{
    return t.taken + t.missing > t.nodes - t.quorum();
}

clock::duration watch_period(const options& o)
{
    return std::chrono::duration_cast<clock::duration>(o.expiry) / 3;
}

// On the strand: takes `l` out of the watchdog's schedule.
void unschedule(lock_state& l)
{
    if (l.watch_slot != watchdog::npos) {
        if (auto w = l.mutex->client->watch.lock()) {
            w->remove(l);
        }
    }
}

// On the strand. Once only: wakes async_wait_lost and emits the guard's lost slot.
void declare_lost(lock_state& l)
{
    if (l.lost.exchange(true)) {
        return;
    }
    unschedule(l);
    if (l.lost_event) {
        l.lost_event->cancel();
    }
    l.lost_signal.emit(asio::cancellation_type::terminal);
}

// On the strand, after `owns` was cleared: the watch and the waiters for loss stop.
void note_released(lock_state& l)
{
    unschedule(l);
    if (l.lost_event) {
        l.lost_event->cancel();
    }
}

// The watch of a held lock, until it is released: declares it lost when its validity runs
// out, and with auto_extend extends it every expiry / 3 first. A failed extension is retried
// (every expiry / 20) while validity lasts, unless the nodes' answers show it is gone. Each
// watched lock sits in its client's watchdog schedule at the instant of its next step.

// On the strand: (re)schedules `l`'s next step.
void schedule_watch(const std::shared_ptr<lock_state>& l)
{
    if (!l->owns || l->lost) {
        return;
    }
    const options& o = l->mutex->opts;
    const bool may_extend =
        o.auto_extend && (o.auto_extend_limit == 0 || l->extensions < o.auto_extend_limit);
    const auto until = l->until.load();
    const auto due = may_extend ? std::min(l->next_extend, until) : until;
    client_impl& c = *l->mutex->client;
    auto w = c.watch.lock();
    if (!w) {
        w = std::make_shared<watchdog>(c.strand);
        c.watch = w;
    }
    w->schedule(l, due);
}

// A manual extension moved the validity: the watch's period restarts from it.
void note_extended(const std::shared_ptr<lock_state>& l)
{
    if (l->watch_slot != watchdog::npos) {
        l->next_extend = std::max(l->next_extend, l->extended_at + watch_period(l->mutex->opts));
        schedule_watch(l);
    }
}

asio::awaitable<void> watch_extend(std::shared_ptr<lock_state> l, clock::time_point now,
                                   std::shared_ptr<watchdog> w)
{
    const options& o = l->mutex->opts;
    tally t;
    try {
        t = co_await run_guard_round(l, extend_round(*l, now));
    } catch (...) {
        w->extension_done();
        throw;
    }
    w->extension_done();
    if (!l->owns || l->lost) {
        co_return;
    }
    const auto until = valid_until(now, o.expiry, o.drift_factor);
    if (t.reached() && clock::now() < until) {
        l->until = until;
        l->extended_at = now;
        ++l->extensions;
        l->next_extend = now + watch_period(o);
    } else if (definitely_gone(t)) {
        declare_lost(*l);
        co_return;
    } else {
        const auto retry_after =
            std::max<clock::duration>(std::chrono::duration_cast<clock::duration>(o.expiry) / 20,
                                      std::chrono::milliseconds(1));
        l->next_extend = clock::now() + retry_after;
    }
    schedule_watch(l);
}

}  // namespace

// On the strand: `l`'s scheduled instant came, or comes within its coalescing window (it is
// no longer scheduled). An extension due within the window goes now, with the others due:
// extending a little early is the same extension, and validity counts from its start. False
// when its extension must wait for running ones to finish (it is then left alone).
bool watch_step(const std::shared_ptr<lock_state>& l, watchdog& w, clock::time_point now)
{
    if (!l->owns || l->lost) {
        return true;
    }
    const options& o = l->mutex->opts;
    const bool may_extend =
        o.auto_extend && (o.auto_extend_limit == 0 || l->extensions < o.auto_extend_limit);
    const auto window = std::min<clock::duration>(watch_period(o) / 100, watchdog::max_window);
    if (may_extend && now + window >= l->next_extend && now < l->until.load()) {
        if (!w.start_extension()) {
            return false;
        }
        asio::co_spawn(l->mutex->client->strand, watch_extend(l, now, w.shared_from_this()),
                       asio::detached);
        return true;
    }
    if (now >= l->until.load()) {
        declare_lost(*l);
        return true;
    }
    schedule_watch(l);
    return true;
}

// ---- stored_report ----

stored_report::stored_report(const report& r) : attempts_(r.attempts)
{
    nodes_.reserve(r.nodes.size());
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
        const node_outcome& o = r.nodes[i];
        const auto us =
            std::clamp<std::chrono::microseconds::rep>(o.latency.count(), 0, 0xffffffff);
        nodes_.push_back(node{static_cast<std::uint32_t>(us), o.status});
        if (o.status == node_status::abandoned) {
            auto known = std::find(abandoned_details.begin(), abandoned_details.end(), o.detail);
            if (known != abandoned_details.end()) {
                nodes_.back().abandoned_detail =
                    static_cast<std::uint8_t>(1 + (known - abandoned_details.begin()));
            }
        }
        const bool rare_detail = !o.detail.empty() && nodes_.back().abandoned_detail == 0;
        if (rare_detail || o.fencing_token != 0) {
            if (!rare_) {
                rare_ = std::make_unique<rare>();
            }
            if (rare_detail) {
                rare_->details.emplace_back(static_cast<std::uint32_t>(i), o.detail);
            }
            if (o.fencing_token != 0) {
                rare_->tokens.emplace_back(static_cast<std::uint32_t>(i), o.fencing_token);
            }
        }
    }
}

report stored_report::expand(const client_impl& c) const
{
    report r;
    r.attempts = attempts_;
    r.nodes.resize(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        node_outcome& o = r.nodes[i];
        if (i < c.nodes.size()) {
            o.endpoint = c.nodes[i]->name();
        }
        o.status = nodes_[i].status;
        o.latency = std::chrono::microseconds(nodes_[i].latency_us);
        if (nodes_[i].abandoned_detail != 0) {
            o.detail = abandoned_details[nodes_[i].abandoned_detail - 1];
        }
    }
    if (rare_) {
        for (const auto& [i, detail] : rare_->details) {
            r.nodes[i].detail = detail;
        }
        for (const auto& [i, token] : rare_->tokens) {
            r.nodes[i].fencing_token = token;
        }
    }
    return r;
}

// ---- watchdog ----

watchdog::watchdog(const asio::any_io_executor& strand) : timer_(strand) {}

void watchdog::place(std::size_t i, item it)
{
    it.lock->watch_slot = i;
    heap_[i] = std::move(it);
}

void watchdog::sift_up(std::size_t i, item it)
{
    while (i > 0) {
        const std::size_t parent = (i - 1) / 2;
        if (!(it.due < heap_[parent].due)) {
            break;
        }
        place(i, std::move(heap_[parent]));
        i = parent;
    }
    place(i, std::move(it));
}

void watchdog::sift_down(std::size_t i, item it)
{
    const std::size_t n = heap_.size();
    for (;;) {
        std::size_t child = 2 * i + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && heap_[child + 1].due < heap_[child].due) {
            ++child;
        }
        if (!(heap_[child].due < it.due)) {
            break;
        }
        place(i, std::move(heap_[child]));
        i = child;
    }
    place(i, std::move(it));
}

void watchdog::erase(std::size_t i)
{
    heap_[i].lock->watch_slot = npos;
    item last = std::move(heap_.back());
    heap_.pop_back();
    if (i == heap_.size()) {
        return;
    }
    if (i > 0 && last.due < heap_[(i - 1) / 2].due) {
        sift_up(i, std::move(last));
    } else {
        sift_down(i, std::move(last));
    }
}

void watchdog::schedule(const std::shared_ptr<lock_state>& l, clock::time_point due)
{
    if (l->watch_slot != npos) {
        const std::size_t i = l->watch_slot;
        item it = std::move(heap_[i]);
        it.due = due;
        if (i > 0 && due < heap_[(i - 1) / 2].due) {
            sift_up(i, std::move(it));
        } else {
            sift_down(i, std::move(it));
        }
    } else {
        heap_.emplace_back();
        sift_up(heap_.size() - 1, item{due, l});
    }
    arm();
}

void watchdog::remove(lock_state& l)
{
    if (l.watch_slot != npos) {
        erase(l.watch_slot);
        arm();
    }
}

void watchdog::arm()
{
    if (heap_.empty()) {
        if (armed_) {
            // No pending wait once nothing is watched, so that io_context::run can return.
            armed_ = false;
            ++ticket_;
            timer_.cancel();
        }
        return;
    }
    const auto due = heap_.front().due;
    if (armed_ && armed_for_ <= due) {
        return;  // wakes earlier than needed at worst, and re-arms then
    }
    armed_ = true;
    armed_for_ = due;
    timer_.expires_at(due);  // cancels the wait for a later instant, if any
    timer_.async_wait(
        [self = shared_from_this(), ticket = ++ticket_](const boost::system::error_code&) {
            if (ticket == self->ticket_) {
                self->armed_ = false;
                self->fire();
            }
        });
}

bool watchdog::start_extension()
{
    if (extending_ >= max_extending) {
        return false;
    }
    ++extending_;
    return true;
}

void watchdog::extension_done()
{
    --extending_;
    // Waiting locks go in batches (half the limit), so that they still share writes.
    if (starved_ && !firing_ && extending_ <= max_extending / 2) {
        fire();
    }
}

void watchdog::fire()
{
    // Every step due, or due within the coalescing window, goes in one pass, so that the
    // extensions due together share writes.
    firing_ = true;
    starved_ = false;
    const auto now = clock::now();
    batch_.clear();
    while (!heap_.empty() && heap_.front().due <= now + max_window &&
           extending_ + batch_.size() < max_extending) {
        batch_.push_back(heap_.front());
        erase(0);
    }
    for (item& it : batch_) {
        if (!watch_step(it.lock, *this, now)) {
            heap_.emplace_back();
            sift_up(heap_.size() - 1, std::move(it));
        }
    }
    batch_.clear();
    firing_ = false;
    if (extending_ >= max_extending && !heap_.empty() && heap_.front().due <= now + max_window) {
        // The rest wait for running extensions: extension_done fires again.
        starved_ = true;
        armed_ = false;
        ++ticket_;
        return;
    }
    arm();
}

namespace {

void start_watch(const std::shared_ptr<lock_state>& l)
{
    if (!l->watched.exchange(true)) {
        // From the strand or (guard::lost_slot) a user's thread.
        asio::dispatch(l->mutex->client->strand, [l] {
            l->next_extend = l->extended_at + watch_period(l->mutex->opts);
            schedule_watch(l);
        });
    }
}

// The message of a release that went out without it, published by the client itself on
// every node; nobody waits for the replies.
struct release_announcement final : request_owner
{
    command cmd;
    void deliver(std::uint32_t, exec_result) override {}
    bool given_up(std::uint32_t) const noexcept override { return false; }
};

void announce_release(const client_impl& c, std::string_view key, std::string_view value)
{
    auto a = std::make_shared<release_announcement>();
    resp::append_command(a->cmd.payload, {"PUBLISH", release_channel(key), value});
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
        c.nodes[i]->submit(a, static_cast<std::uint32_t>(i), a->cmd);
    }
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
                    resume_writes(client_.nodes);
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
    /// True when the client holds its writes for this attempt (a hand-off): the attempt's
    /// round resumes them from now on.
    bool take_held_writes() { return std::exchange(waiter_.holds_writes, false); }

  private:
    client_impl& client_;
    const std::vector<std::string>& keys_;
    waiter waiter_;
    bool watching_ = false;
    bool skipped_ = false;
};

// A release by this client: its longest-waiting acquire of each key tries at once, and its
// requests follow the release's on every connection. For a single key the client holds its
// writes until that attempt is queued, so that both go out in one write per node, and the
// release is sent without its message: the key is never free, and other clients' waiters
// would only wake to lose. A reentrant release may only lower a count, so it leaves the
// wake-up to the node's message. Returns the release's round.
round handing_off(const lock_state& l)
{
    const mutex_state& m = *l.mutex;
    bool announce = true;
    if (!m.opts.reentrant) {
        const bool hold = m.keys.size() == 1;
        for (const std::string& key : m.keys) {
            if (m.client->waiters->hand_off(key, l.value, hold, clock::now(),
                                            longest_run(m.opts.expiry)) &&
                hold) {
                hold_writes(m.client->nodes);
                announce = false;
            }
        }
    }
    // Released once a quorum confirms it, or once that can no longer happen.
    return release_round(m, l.value, announce, stop_rule::outcome_known);
}

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
    const tally t = count(co_await run_round(c->nodes, std::move(r)));
    co_return t.reached() && clock::now() < until;
}

using guard_result = std::tuple<error_code, guard>;

asio::awaitable<guard_result> acquire_op(std::shared_ptr<mutex_state> m, bool single_attempt)
{
    // Cancellation is checked after each step, so that a cancelled attempt still cleans up.
    // As accept_cancellation(), without the frame of a nested coroutine.
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
    const auto give_up_at = o.wait ? started + *o.wait : clock::time_point::max();
    const int tries = single_attempt ? 1 : o.tries;
    const auto per_node = node_timeout(o.expiry, o.timeout_factor);
    asio::steady_timer pause(c->strand);
    wake_on_release wake(*c, m->keys, pause);
    error_code last = error::failed;
    report rep;

    for (int attempt = 1; attempt <= tries; ++attempt) {
        // While the lock is held by, or being handed to, another acquire of this client and
        // others of its acquires wait for it, a first attempt would fail (the hand-off's
        // request is ahead of it on every connection): this acquire joins the line instead,
        // and that counts as its first attempt.
        if (attempt == 1 && tries > 1 && o.wake_on_release && !o.reentrant &&
            c->waiters->ours(m->keys)) {
            last = error::taken;
            wake.start();
        } else {
            wake.attempting();
            const auto start = clock::now();
            request req = acquire_request(m->shape(), value, o.expiry);
            round r{.cmd = std::move(req.cmd),
                    .read = req.read,
                    .value = value,
                    .deadline = start + per_node,
                    .rule = o.fail_fast ? stop_rule::outcome_known : stop_rule::quorum_reached,
                    .shuffle = o.shuffle_nodes,
                    .replies_with_token = o.fencing,
                    .resumes_held_writes = wake.take_held_writes()};
            auto outcomes = co_await run_round(c->nodes, std::move(r));
            const tally t = count(outcomes);
            const auto until = valid_until(start, o.expiry, o.drift_factor);
            const std::uint64_t token = o.fencing ? largest_token(outcomes) : 0;
            rep = make_report(std::move(outcomes), attempt);

            bool granted = !cancelled(cs) && t.reached() && clock::now() < until;
            if (granted && o.fencing) {
                // The token may be used only once a majority's counters are at least as large:
                // that is what makes every later acquisition's token larger (docs/safety.md).
                granted = co_await write_back_token(c, *m, token, until) && !cancelled(cs);
            }
            if (granted) {
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
                co_return guard_result{error_code{}, guard(std::move(l))};
            }

            // A failed attempt may still have set the key on some nodes (or on all of them, if
            // the validity ran out): delete it everywhere before anything else. Queued in the
            // same turn as the attempt's timeouts, so that on a node that stopped answering it
            // follows the attempt's request on the same socket (connection::gave_up). Done
            // once a quorum replied: those nodes no longer hold the value; the others' deletes
            // go on in the background, even if the caller cancels meanwhile.
            co_await run_round(c->nodes, release_round(*m, value, true, stop_rule::quorum_replied));

            if (cancelled(cs)) {
                co_return guard_result{asio::error::operation_aborted, failed_guard(m, rep)};
            }
            // Nodes that fail the same way on every try (a wrong password, a replica, ...):
            // once they rule out a quorum, further tries only hide the cause.
            if (quorum_ruled_out(rep.nodes)) {
                co_return guard_result{error::misconfigured, failed_guard(m, rep)};
            }
            last =
                t.taken_by_other() ? make_error_code(error::taken) : make_error_code(error::failed);
            c->waiters->attempt_failed(m->keys);
            if (o.wake_on_release && t.taken > 0) {
                wake.start();  // from now on a release wakes the retry below
            }
        }
        if (attempt == tries) {
            break;
        }
        std::chrono::milliseconds delay{};
        try {
            delay = o.retry_delay(attempt);
        } catch (const std::exception&) {
            // A user's delay function that throws is a bad option, not a lock outcome.
            co_return guard_result{error::invalid_argument, failed_guard(m, rep)};
        }
        if (clock::now() + delay >= give_up_at) {
            break;
        }
        bool after_release = wake.missed_a_release();
        if (!after_release) {
            pause.expires_after(delay);
            wake.pausing(true);
            co_await pause.async_wait(asio::as_tuple(use_awaitable));
            while (wake.rescheduled()) {
                co_await pause.async_wait(asio::as_tuple(use_awaitable));
            }
            wake.pausing(false);
            after_release = wake.woken_by_release_message();
        }
        if (after_release && !cancelled(cs)) {
            // Other clients' waiters heard of the same release: see release_wake_spread.
            pause.expires_after(random_release_wake_delay());
            co_await pause.async_wait(asio::as_tuple(use_awaitable));
        }
        if (cancelled(cs)) {
            co_return guard_result{asio::error::operation_aborted, failed_guard(m, rep)};
        }
    }
    co_return guard_result{last, failed_guard(m, rep)};
}

using void_result = std::tuple<error_code>;

asio::awaitable<void_result> release_op(std::shared_ptr<lock_state> l)
{
    // As accept_cancellation(), without the frame of a nested coroutine.
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    auto cs = co_await asio::this_coro::cancellation_state;
    if (!l || !l->owns.exchange(false)) {
        co_return void_result{error::not_held};
    }
    note_released(*l);
    const tally t = co_await run_guard_round(l, handing_off(*l));
    if (cancelled(cs)) {
        co_return void_result{asio::error::operation_aborted};
    }
    co_return void_result{t.reached() ? error_code{} : make_error_code(error::not_held)};
}

asio::awaitable<void_result> extend_op(std::shared_ptr<lock_state> l)
{
    // As accept_cancellation(), without the frame of a nested coroutine.
    co_await asio::this_coro::throw_if_cancelled(false);
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
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
    const tally t = co_await run_guard_round(l, extend_round(*l, start));
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
    // As accept_cancellation(), without the frame of a nested coroutine.
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
            .shuffle = o.shuffle_nodes};
    const tally t = co_await run_guard_round(l, std::move(r));
    if (cancelled(cs)) {
        co_return bool_result{asio::error::operation_aborted, false};
    }
    co_return bool_result{error_code{}, t.reached()};
}

asio::awaitable<void_result> wait_lost_op(std::shared_ptr<lock_state> l)
{
    // As accept_cancellation(), without the frame of a nested coroutine.
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

asio::awaitable<void_result> shutdown_op(std::shared_ptr<client_impl> c)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    auto cs = co_await asio::this_coro::cancellation_state;
    c->shut_down = true;
    co_await c->background->drained();
    for (auto& n : c->nodes) {
        n->close("client shut down");
    }
    for (auto& s : c->subscribers) {
        s->close();
    }
    co_return void_result{cancelled(cs) ? asio::error::operation_aborted : error_code{}};
}

}  // namespace

void initiate_acquire(std::shared_ptr<mutex_state> m, bool single_attempt, guard_handler h)
{
    auto c = m->client;
    spawn_operation(c, acquire_op(std::move(m), single_attempt), std::move(h));
}

// A guard that owns nothing has no client; its operations complete (posted, never inline)
// on the handler's executor.
template <class... Ts>
void complete_without_client(asio::any_completion_handler<void(error_code, Ts...)> h,
                             std::tuple<error_code, Ts...> result)
{
    auto ex =
        asio::prefer(asio::get_associated_executor(h, asio::system_executor()),
                     asio::execution::blocking.never, asio::execution::outstanding_work.tracked);
    ex.execute([h = std::move(h), result = std::move(result)]() mutable {
        std::apply([&h](auto&&... args) { std::move(h)(std::move(args)...); }, std::move(result));
    });
}

void initiate_release(std::shared_ptr<lock_state> l, void_handler h)
{
    if (!l) {
        return complete_without_client(std::move(h), void_result{error::not_held});
    }
    auto c = l->mutex->client;
    spawn_operation(c, release_op(std::move(l)), std::move(h));
}

void initiate_extend(std::shared_ptr<lock_state> l, void_handler h)
{
    if (!l) {
        return complete_without_client(std::move(h), void_result{error::not_held});
    }
    auto c = l->mutex->client;
    spawn_operation(c, extend_op(std::move(l)), std::move(h));
}

void initiate_valid(std::shared_ptr<lock_state> l, bool_handler h)
{
    if (!l) {
        return complete_without_client(std::move(h), bool_result{error::not_held, false});
    }
    auto c = l->mutex->client;
    spawn_operation(c, valid_op(std::move(l)), std::move(h));
}

void initiate_wait_lost(std::shared_ptr<lock_state> l, void_handler h)
{
    if (!l) {
        return complete_without_client(std::move(h), void_result{error::not_held});
    }
    auto c = l->mutex->client;
    spawn_operation(c, wait_lost_op(std::move(l)), std::move(h));
}

void initiate_shutdown(std::shared_ptr<client_impl> c, void_handler h)
{
    auto ex = c;
    spawn_operation(ex, shutdown_op(std::move(c)), std::move(h));
}

// The release a destructor schedules: nobody awaits it, the client counts it.
void release_in_background(const std::shared_ptr<lock_state>& l)
{
    if (!l || !l->owns.exchange(false)) {
        return;
    }
    auto background = l->mutex->client->background;
    background->begin();
    asio::co_spawn(
        l->mutex->client->strand,
        [](std::shared_ptr<lock_state> l) -> asio::awaitable<void> {
            note_released(*l);
            co_await run_guard_round(l, handing_off(*l));
        }(l),
        [background](const std::exception_ptr&) { background->end(); });
}

client_impl::client_impl(const asio::any_io_executor& ex, redlock::config config)
    : executor(ex),
      strand(make_client_strand(ex)),
      cfg(std::move(config)),
      background(std::make_shared<background_work>(strand))
{
    const connection_settings settings = make_connection_settings(cfg);
    for (const node& n : cfg.nodes) {
        nodes.push_back(std::make_shared<connection>(strand, n, settings));
        subscribers.push_back(std::make_shared<subscriber>(strand, n, settings, waiters));
    }
}

}  // namespace detail

// ---- client ----

client::client(const executor_type& ex, redlock::config cfg)
{
    if (std::string problem = validate(cfg); !problem.empty()) {
        throw boost::system::system_error(make_error_code(error::invalid_argument), problem);
    }
    impl_ = std::make_shared<detail::client_impl>(ex, std::move(cfg));
}

client::~client() = default;

client::executor_type client::get_executor() const noexcept
{
    return impl_->executor;
}

std::vector<node_counters> client::node_counters() const
{
    std::vector<redlock::node_counters> all;
    for (const auto& n : impl_->nodes) {
        all.push_back(n->counters());
    }
    return all;
}

const config& client::config() const noexcept
{
    return impl_->cfg;
}

mutex client::make_mutex(std::string name, options opts)
{
    std::vector<std::string> keys;
    keys.push_back(std::move(name));
    return make_multi_mutex(std::move(keys), std::move(opts));
}

mutex client::make_multi_mutex(std::vector<std::string> names, options opts)
{
    if (std::string problem = validate(opts, names); !problem.empty()) {
        throw boost::system::system_error(make_error_code(error::invalid_argument), problem);
    }
    auto m = std::make_shared<detail::mutex_state>();
    m->client = impl_;
    if (names.size() != 1) {
        for (const std::string& key : names) {
            m->name += (m->name.empty() ? "" : ", ") + key;
        }
    }
    m->keys = std::move(names);
    if (opts.reentrant) {
        m->owner = !opts.value.empty() ? opts.value
                   : opts.gen_value    ? opts.gen_value()
                                       : detail::random_owner_value();
        if (m->owner.empty()) {
            throw boost::system::system_error(make_error_code(error::invalid_argument),
                                              "options.gen_value returned an empty owner value");
        }
    }
    m->opts = std::move(opts);
    return mutex(std::move(m));
}

mutex client::make_mutex(std::string name)
{
    return make_mutex(std::move(name), options{});
}

// ---- mutex ----

const std::vector<std::string>& mutex::keys() const noexcept
{
    return state_->keys;
}

const std::string& mutex::name() const noexcept
{
    return state_->display_name();
}

const options& mutex::options() const noexcept
{
    return state_->opts;
}

report mutex::last_report() const
{
    return state_->get_report();
}

// ---- guard ----

namespace {
const std::string empty_string;
}  // namespace

guard::guard() noexcept = default;

guard::guard(std::shared_ptr<detail::lock_state> state) noexcept : state_(std::move(state)) {}

guard::guard(guard&& other) noexcept = default;

guard& guard::operator=(guard&& other) noexcept
{
    if (this != &other) {
        release_in_background();
        state_ = std::move(other.state_);
    }
    return *this;
}

guard::~guard()
{
    release_in_background();
}

void guard::release_in_background() noexcept
{
    try {
        detail::release_in_background(state_);
    } catch (...) {
        // Out of memory while scheduling: the keys expire by their TTL.
    }
    state_.reset();
}

const std::string& guard::name() const noexcept
{
    return state_ ? state_->mutex->display_name() : empty_string;
}

const std::string& guard::value() const noexcept
{
    return state_ ? state_->value : empty_string;
}

std::chrono::steady_clock::time_point guard::until() const noexcept
{
    return state_ ? state_->until.load() : std::chrono::steady_clock::time_point{};
}

bool guard::owns_lock() const noexcept
{
    return state_ && state_->owns;
}

report guard::last_report() const
{
    return state_ ? state_->get_report() : report{};
}

std::uint64_t guard::fencing_token() const noexcept
{
    return state_ ? state_->fencing_token : 0;
}

bool guard::lost() const noexcept
{
    return state_ && state_->lost;
}

boost::asio::cancellation_slot guard::lost_slot()
{
    if (!state_) {
        return {};
    }
    detail::start_watch(state_);
    return state_->lost_signal.slot();
}

}  // namespace redlock
