// SPDX-License-Identifier: BSL-1.0
// The watchdog: one schedule and one timer for the watched locks of a client.

#include "lock/watchdog.hpp"

#include <redlock/error.hpp>

#include "lock/client_impl.hpp"
#include "lock/lock_events.hpp"
#include "lock/lock_rounds.hpp"
#include "lock/lock_state.hpp"
#include "lock/watchdog_fsm.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>

#include <algorithm>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

// On the strand: takes `l` out of the watchdog's schedule.
void unschedule(lock_state& l)
{
    if (l.watch_slot != watchdog::npos) {
        if (auto w = l.mutex->client->watch.lock()) {
            w->remove(l);
        }
    }
}

watchdog_fsm fsm_of(const lock_state& l)
{
    return watchdog_fsm(extension_rules_for(l.mutex->opts));
}

watched_lock watched_of(const lock_state& l)
{
    return {.owns = l.owns,
            .lost = l.lost,
            .until = l.until.load(),
            .extended_at = l.extended_at,
            .next_extend = l.next_extend,
            .extensions = l.extensions};
}

// The fields the watch's machine may move.
void store(lock_state& l, const watched_lock& s)
{
    l.until = s.until;
    l.extended_at = s.extended_at;
    l.next_extend = s.next_extend;
    l.extensions = s.extensions;
}

// On the strand: does what the watch of `l` decided (but `extend`, which `step_watch` does).
void follow(const std::shared_ptr<lock_state>& l, watch_action act)
{
    switch (act.step) {
        case watch_step::stop:
        case watch_step::extend:
            unschedule(*l);
            return;
        case watch_step::declare_lost:
            declare_lost(*l);
            return;
        case watch_step::wait:
            break;
    }
    client_impl& c = *l->mutex->client;
    auto w = c.watch.lock();
    if (!w) {
        w = std::make_shared<watchdog>(c.strand);
        c.watch = w;
    }
    w->schedule(l, act.at);
}

asio::awaitable<void> watch_extend(std::shared_ptr<lock_state> l, clock::time_point start,
                                   std::shared_ptr<watchdog> w)
{
    tally t;
    try {
        t = keep_report(*l,
                        co_await run_round(l->mutex->client->connections, extend_round(*l, start)));
    } catch (...) {
        w->extension_done();
        throw;
    }
    w->extension_done();
    watched_lock s = watched_of(*l);
    const int before = s.extensions;
    const watch_action act = fsm_of(*l).extension_done(s, start, t, clock::now());
    store(*l, s);
    // Released or lost meanwhile: this extension no longer counts for the hold.
    if (s.owns && !s.lost) {
        emit_extension(*l, start,
                       s.extensions > before ? boost::system::error_code{}
                                             : make_error_code(error::extend_failed));
    }
    follow(l, act);
}

// On the strand: `l`'s scheduled instant came, or comes within its coalescing window (it is
// no longer scheduled). False when its extension must wait for running ones to finish (it is
// then left alone).
bool step_watch(const std::shared_ptr<lock_state>& l, watchdog& w, clock::time_point now)
{
    const watch_action act = fsm_of(*l).due(watched_of(*l), now);
    if (act.step != watch_step::extend) {
        follow(l, act);
        return true;
    }
    if (!w.start_extension()) {
        return false;
    }
    asio::co_spawn(l->mutex->client->strand, watch_extend(l, act.at, w.shared_from_this()),
                   asio::detached);
    return true;
}

}  // namespace

void declare_lost(lock_state& l)
{
    if (l.lost.exchange(true)) {
        return;
    }
    unschedule(l);
    emit_hold_end(l, lock_event_kind::lost);
    if (l.lost_event) {
        l.lost_event->cancel();
    }
    l.lost_signal.emit(asio::cancellation_type::terminal);
}

void note_released(lock_state& l)
{
    unschedule(l);
    emit_hold_end(l, lock_event_kind::released);
    if (l.lost_event) {
        l.lost_event->cancel();
    }
}

void note_extended(const std::shared_ptr<lock_state>& l)
{
    // Not while the watch's own extension round runs: its end re-reads the validity.
    if (l->watch_slot != watchdog::npos) {
        watched_lock s = watched_of(*l);
        const watch_action act = fsm_of(*l).extended_elsewhere(s);
        store(*l, s);
        follow(l, act);
    }
}

void start_watch(const std::shared_ptr<lock_state>& l)
{
    if (!l->watched.exchange(true)) {
        // From the strand or (guard::lost_slot) a user's thread.
        asio::dispatch(l->mutex->client->strand, [l] {
            watched_lock s = watched_of(*l);
            const watch_action act = fsm_of(*l).start(s);
            store(*l, s);
            follow(l, act);
        });
    }
}

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
    while (!heap_.empty() && heap_.front().due <= now + watchdog_fsm::max_window &&
           extending_ + batch_.size() < max_extending) {
        batch_.push_back(heap_.front());
        erase(0);
    }
    for (item& it : batch_) {
        if (!step_watch(it.lock, *this, now)) {
            heap_.emplace_back();
            sift_up(heap_.size() - 1, std::move(it));
        }
    }
    batch_.clear();
    firing_ = false;
    if (extending_ >= max_extending && !heap_.empty() &&
        heap_.front().due <= now + watchdog_fsm::max_window) {
        // The rest wait for running extensions: extension_done fires again.
        starved_ = true;
        armed_ = false;
        ++ticket_;
        return;
    }
    arm();
}

}  // namespace redlock::detail
