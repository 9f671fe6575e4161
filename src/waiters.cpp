#include "detail/waiters.hpp"

#include <algorithm>

namespace redlock::detail {

void waiter_queue::enter(const std::string& key, waiter& w)
{
    by_key_[key].waiters.push_back(&w);
}

void waiter_queue::leave(std::string_view key, const waiter& w)
{
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
        return;
    }
    std::erase(it->second.waiters, &w);
    if (it->second.waiters.empty()) {
        by_key_.erase(it);
    }
}

void waiter_queue::wake(waiter& w)
{
    // Not pausing from now on, although its coroutine resumes only later: a second release
    // message before then must not wake another waiter as well.
    w.pausing = false;
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

waiter* waiter_queue::hand_off(std::string_view key, std::string_view value)
{
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
        return nullptr;
    }
    waiter* w = wake_first_pausing(it->second);
    if (w) {
        it->second.answered = value;
    }
    return w;
}

waiter* waiter_queue::released(std::string_view key, std::string_view value)
{
    auto it = by_key_.find(key);
    if (it == by_key_.end() || (!value.empty() && value == it->second.answered)) {
        return nullptr;
    }
    queue& q = it->second;
    bool attempting = false;
    for (waiter* w : q.waiters) {
        if (!w->pausing) {
            w->missed = true;
            attempting = true;
        }
    }
    waiter* woken = attempting ? nullptr : wake_first_pausing(q);
    if (attempting || woken) {
        q.answered = value;
    }
    return woken;
}

std::size_t waiter_queue::waiting(std::string_view key) const
{
    auto it = by_key_.find(key);
    return it == by_key_.end() ? 0 : it->second.waiters.size();
}

}  // namespace redlock::detail
