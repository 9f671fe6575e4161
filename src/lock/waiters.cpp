// SPDX-License-Identifier: BSL-1.0
#include "lock/waiters.hpp"

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

void waiter_queue::enter(const std::string& key, waiter& w)
{
    by_key_[key].waiters.push_back(&w);
}

bool waiter_queue::leave(std::string_view key, waiter& w)
{
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
        return false;
    }
    std::erase(it->second.waiters, &w);
    waiter* next = nullptr;
    if (it->second.waiters.empty()) {
        by_key_.erase(it);
    } else if (w.woken || w.held_writes) {
        next = wake_first_pausing(it->second);
        if (next) {
            next->by_release_message = w.by_release_message;
        }
    }
    if (!w.held_writes) {
        return false;
    }
    if (next) {
        next->by_release_message = false;
        next->held_writes = std::move(w.held_writes);
        next->handed_value = std::move(w.handed_value);
        return false;
    }
    return true;
}

namespace {
// How many recent releases a client recognises the late messages of.
constexpr std::size_t answered_kept = 8;
}  // namespace

void waiter_queue::queue::answer(std::string_view value)
{
    if (value.empty() || was_answered(value)) {
        return;
    }
    if (answered.size() == answered_kept) {
        answered.erase(answered.begin());
    }
    answered.emplace_back(value);
}

bool waiter_queue::queue::was_answered(std::string_view value) const
{
    return !value.empty() && std::find(answered.begin(), answered.end(), value) != answered.end();
}

void waiter_queue::wake(waiter& w)
{
    // Not pausing from now on, although its coroutine resumes only later: a second release
    // message before then must not wake another waiter as well.
    w.pausing = false;
    w.woken = true;
    w.rescheduled = false;
    w.by_release_message = false;
    w.timer->cancel();
}

waiter* waiter_queue::wake_first_pausing(queue& q)
{
    for (waiter* w : q.waiters) {
        if (w->pausing) {
            wake(*w);
            return w;
        }
    }
    return nullptr;
}

waiter* waiter_queue::hand_off(std::string_view key, std::string_view value,
                               const std::vector<std::shared_ptr<node_link>>* hold_writes_of,
                               std::chrono::steady_clock::time_point now,
                               std::chrono::steady_clock::duration max_run)
{
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
        return nullptr;
    }
    queue& q = it->second;
    if (q.ours && now - q.run_started >= max_run) {
        q.ours = false;
        q.yielding = true;
        q.answer(value);
        for (waiter* w : q.waiters) {
            if (w->pausing) {
                const auto retry_at = now + yield_courtesy;
                if (w->timer->expiry() > retry_at) {
                    w->rescheduled = true;
                    w->timer->expires_at(retry_at);  // cancels the wait under way
                }
                break;
            }
        }
        return nullptr;
    }
    if (!q.ours) {
        q.run_started = now;
    }
    waiter* w = wake_first_pausing(it->second);
    if (w) {
        it->second.answer(value);
        if (hold_writes_of) {
            w->held_writes = write_hold(*hold_writes_of);
            w->handed_value = value;
        }
    }
    it->second.ours = w != nullptr;
    return w;
}

waiter* waiter_queue::released(std::string_view key, std::string_view value)
{
    auto it = by_key_.find(key);
    if (it == by_key_.end() || it->second.was_answered(value)) {
        return nullptr;
    }
    queue& q = it->second;
    q.ours = false;  // another owner's release, or one of ours that nobody here took over
    q.yielding = false;
    bool attempting = false;
    for (waiter* w : q.waiters) {
        if (!w->pausing) {
            w->missed = true;
            attempting = true;
        }
    }
    waiter* woken = attempting ? nullptr : wake_first_pausing(q);
    if (woken) {
        woken->by_release_message = true;
    }
    if (attempting || woken) {
        q.answer(value);
    }
    return woken;
}

void waiter_queue::granted(const std::vector<std::string>& keys,
                           std::chrono::steady_clock::time_point now)
{
    for (const std::string& key : keys) {
        if (auto it = by_key_.find(key); it != by_key_.end()) {
            queue& q = it->second;
            if (!q.ours) {
                q.run_started = now;
            }
            q.ours = true;
            q.yielding = false;
        }
    }
}

void waiter_queue::attempt_failed(const std::vector<std::string>& keys)
{
    for (const std::string& key : keys) {
        if (auto it = by_key_.find(key); it != by_key_.end()) {
            it->second.ours = false;
        }
    }
}

bool waiter_queue::ours(const std::vector<std::string>& keys) const
{
    return std::any_of(keys.begin(), keys.end(), [this](const std::string& key) {
        auto it = by_key_.find(key);
        return it != by_key_.end() && (it->second.ours || it->second.yielding);
    });
}

std::size_t waiter_queue::waiting(std::string_view key) const
{
    auto it = by_key_.find(key);
    return it == by_key_.end() ? 0 : it->second.waiters.size();
}

}  // namespace redlock::detail
