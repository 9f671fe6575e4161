// SPDX-License-Identifier: BSL-1.0
#include "lock/waiters.hpp"

#include <boost/assert.hpp>

#include <algorithm>
#include <random>

namespace redlock::detail {

std::chrono::microseconds random_release_wake_delay()
{
    thread_local std::mt19937 engine{std::random_device{}()};
    std::uniform_int_distribution<std::chrono::microseconds::rep> us(0,
                                                                     release_wake_spread.count());
    return std::chrono::microseconds{us(engine)};
}

std::uint64_t waiting_since_now()
{
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

void waiter::on(waiter_event e)
{
    const std::optional<waiter_state> next = next_state(state_, e);
    BOOST_ASSERT_MSG(next, "an event that cannot happen in the waiter's state");
    if (next) {
        state_ = *next;
    }
}

write_hold waiter::attempt_begins()
{
    on(waiter_event::attempt_begins);
    handed_value.clear();
    woken_alone = false;
    return std::move(held_writes);
}

void waiter_queue::enter(const std::string& key, waiter& w, std::string_view turn_value)
{
    line& l = lines_[key];
    if (l.since == 0) {
        l.since = waiting_since_now();
    }
    if (turn_value.empty()) {
        l.waiters.push_back(&w);
    } else {
        l.turns.push_back(turn{std::string(turn_value), &w});
    }
}

bool waiter_queue::leave(std::string_view key, waiter& w)
{
    auto it = lines_.find(key);
    if (it == lines_.end()) {
        return false;
    }
    std::erase(it->second.waiters, &w);
    std::erase_if(it->second.turns, [&w](const turn& t) { return t.w == &w; });
    waiter* next = is_woken(w.state()) ? it->second.next_in_line() : nullptr;
    if (it->second.waiters.empty() && it->second.turns.empty()) {
        lines_.erase(it);
    }
    if (!next) {
        return static_cast<bool>(w.held_writes);
    }
    wake(*next, w.state() == waiter_state::woken_by_hand_off ? waiter_event::hand_off
                                                             : waiter_event::release_message);
    next->held_writes = std::move(w.held_writes);
    next->handed_value = std::move(w.handed_value);
    return false;
}

namespace {
// How many recent releases a client recognises the late messages of.
constexpr std::size_t answered_kept = 8;
}  // namespace

void waiter_queue::line::answer(std::string_view value, bool ours, const waiter* woken)
{
    if (value.empty() || was_answered(value)) {
        return;
    }
    if (answered.size() == answered_kept) {
        answered.erase(answered.begin());
    }
    answered.push_back({std::string(value), ours, woken});
}

const waiter_queue::answered_release* waiter_queue::line::answered_as(std::string_view value) const
{
    auto it = std::find_if(answered.begin(), answered.end(),
                           [value](const answered_release& a) { return a.value == value; });
    return value.empty() || it == answered.end() ? nullptr : &*it;
}

waiter* waiter_queue::line::still_waiting(const waiter* w) const
{
    auto it = std::find(waiters.begin(), waiters.end(), w);
    return w == nullptr || it == waiters.end() ? nullptr : *it;
}

waiter* waiter_queue::line::next_in_line() const
{
    auto it = std::find_if(waiters.begin(), waiters.end(),
                           [](const waiter* w) { return is_pausing(w->state()); });
    return it == waiters.end() ? nullptr : *it;
}

void waiter_queue::wake(waiter& w, waiter_event how)
{
    // Woken from now on, although its coroutine resumes only later: a second release before
    // then must not wake another waiter as well.
    w.on(how);
    w.pause().cancel();
}

void waiter_queue::yield(line& l, std::string_view value, std::chrono::steady_clock::time_point now)
{
    l.held_by = holder::yielded;
    l.answer(value, true);
    if (waiter* w = l.next_in_line()) {
        const auto retry_at = now + yield_courtesy;
        if (w->pause().expiry() > retry_at) {
            w->on(waiter_event::pause_moved);
            w->pause().expires_at(retry_at);  // cancels the wait under way
        }
    }
}

waiter* waiter_queue::hand_off(std::string_view key, std::string_view value,
                               const std::vector<std::shared_ptr<node_link>>* hold_writes_of,
                               std::chrono::steady_clock::time_point now,
                               std::chrono::steady_clock::duration max_run)
{
    auto it = lines_.find(key);
    if (it == lines_.end()) {
        return nullptr;
    }
    line& l = it->second;
    const bool in_a_run = l.held_by == holder::this_client;
    if (in_a_run && now - l.run_started >= max_run) {
        yield(l, value, now);
        l.since = waiting_since_now();
        return nullptr;
    }
    waiter* w = l.next_in_line();
    if (!w) {
        if (in_a_run) {
            l.held_by = holder::not_this_client;
        }
        l.since = waiting_since_now();
        return nullptr;
    }
    if (!in_a_run) {
        l.run_started = now;
    }
    l.held_by = holder::this_client;
    l.answer(value, true, w);
    wake(*w, waiter_event::hand_off);
    if (hold_writes_of) {
        w->held_writes = write_hold(*hold_writes_of);
        w->handed_value = value;
    }
    return w;
}

waiter* waiter_queue::tell_turn(waiter& w, const fair_message& m, std::size_t node)
{
    if (m.hand_off_stamp && !w.hand_offs.heard(node, *m.hand_off_stamp)) {
        return nullptr;  // short of a quorum yet, or a hand-off that its clean-up undid
    }
    // Told by each node, some of them late: a waiter already woken or attempting only notes it.
    const bool waiting = w.state() == waiter_state::queued;
    w.on(waiter_event::named_head);
    if (waiting) {
        w.pause().cancel();
    }
    return &w;
}

waiter* waiter_queue::released(std::string_view key, std::string_view value, std::size_t node,
                               bool named)
{
    auto it = lines_.find(key);
    if (it == lines_.end()) {
        return nullptr;
    }
    line& l = it->second;
    if (const auto m = l.turns.empty() ? std::nullopt : read_fair_message(value)) {
        for (const turn& t : l.turns) {
            if (t.value == m->value) {
                return tell_turn(*t.w, *m, node);
            }
        }
    }
    if (const answered_release* earlier = l.answered_as(value)) {
        return repeated(l, *earlier, named);
    }
    l.held_by = holder::not_this_client;  // another owner's, or ours that nobody here took over
    const std::vector<release_effect> effects = release_effects(members_of(l));
    waiter* first_woken = nullptr;
    for (std::size_t i = 0; i < effects.size(); ++i) {
        waiter& w = *l.waiters[i];
        if (effects[i] == release_effect::seen) {
            w.on(waiter_event::release_seen);
        } else if (effects[i] == release_effect::woken) {
            wake(w, waiter_event::release_message);
            w.woken_alone = named;
            first_woken = first_woken ? first_woken : &w;
        }
    }
    if (std::any_of(effects.begin(), effects.end(),
                    [](release_effect e) { return e != release_effect::none; })) {
        l.answer(value, false, first_woken);
    }
    return first_woken;
}

std::vector<line_member> waiter_queue::members_of(const line& l)
{
    std::vector<line_member> members;
    members.reserve(l.waiters.size());
    for (const waiter* w : l.waiters) {
        members.push_back({w->state(), w->rule()});
    }
    return members;
}

// The nodes run a release one after another: the waiter that the first node's message woke
// may attempt before the release reached the others, and be refused there. So a later node's
// message of it wakes nobody new, but is seen by the attempts under way (they retry at once
// instead of pausing), and wakes again the waiter it woke if that one is pausing once more.
waiter* waiter_queue::repeated(line& l, const answered_release& earlier, bool named)
{
    if (earlier.ours) {
        return nullptr;  // the client's own waiters took it, or left it to others (a yield)
    }
    const std::vector<release_effect> effects = release_effects(members_of(l));
    for (std::size_t i = 0; i < effects.size(); ++i) {
        if (effects[i] == release_effect::seen) {
            l.waiters[i]->on(waiter_event::release_seen);
        }
    }
    waiter* w = l.still_waiting(earlier.woken);
    if (!w || !is_pausing(w->state())) {
        return nullptr;
    }
    wake(*w, waiter_event::release_message);
    w->woken_alone = named;
    return w;
}

void waiter_queue::granted(const std::vector<std::string>& keys,
                           std::chrono::steady_clock::time_point now)
{
    for (const std::string& key : keys) {
        if (auto it = lines_.find(key); it != lines_.end()) {
            line& l = it->second;
            if (l.held_by != holder::this_client) {
                l.run_started = now;
            }
            l.held_by = holder::this_client;
        }
    }
}

void waiter_queue::attempt_failed(const std::vector<std::string>& keys)
{
    for (const std::string& key : keys) {
        if (auto it = lines_.find(key);
            it != lines_.end() && it->second.held_by == holder::this_client) {
            it->second.held_by = holder::not_this_client;
        }
    }
}

bool waiter_queue::ours(const std::vector<std::string>& keys) const
{
    return std::any_of(keys.begin(), keys.end(), [this](const std::string& key) {
        auto it = lines_.find(key);
        return it != lines_.end() && it->second.held_by != holder::not_this_client;
    });
}

bool waiter_queue::taking_a_release(const std::vector<std::string>& keys) const
{
    return std::any_of(keys.begin(), keys.end(), [this](const std::string& key) {
        auto it = lines_.find(key);
        return it != lines_.end() &&
               std::any_of(it->second.waiters.begin(), it->second.waiters.end(),
                           [](const waiter* w) {
                               return w->state() == waiter_state::woken_by_release_message;
                           });
    });
}

std::uint64_t waiter_queue::since(std::string_view key) const
{
    auto it = lines_.find(key);
    return it == lines_.end() ? 0 : it->second.since;
}

std::size_t waiter_queue::waiting(std::string_view key) const
{
    auto it = lines_.find(key);
    return it == lines_.end() ? 0 : it->second.waiters.size() + it->second.turns.size();
}

}  // namespace redlock::detail
