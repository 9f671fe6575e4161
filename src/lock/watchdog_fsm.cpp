// SPDX-License-Identifier: BSL-1.0
#include "lock/watchdog_fsm.hpp"

#include <algorithm>

namespace redlock::detail {

namespace {

clock::duration expiry_of(const extension_rules& r)
{
    return std::chrono::duration_cast<clock::duration>(r.expiry);
}

}  // namespace

watchdog_fsm::watchdog_fsm(const extension_rules& rules) noexcept
    : rules_(rules),
      period_(expiry_of(rules) / 3),
      retry_after_(std::max<clock::duration>(expiry_of(rules) / 20, std::chrono::milliseconds(1))),
      window_(std::min<clock::duration>(period_ / 100, max_window))
{
}

watch_action watchdog_fsm::next(const watched_lock& l) const noexcept
{
    if (!l.owns || l.lost) {
        return {.step = watch_step::stop};
    }
    const auto at = may_extend(l) ? std::min(l.next_extend, l.until) : l.until;
    return {.step = watch_step::wait, .at = at};
}

watch_action watchdog_fsm::start(watched_lock& l) const noexcept
{
    l.next_extend = l.extended_at + period_;
    return next(l);
}

watch_action watchdog_fsm::due(const watched_lock& l, clock::time_point now) const noexcept
{
    if (!l.owns || l.lost) {
        return {.step = watch_step::stop};
    }
    if (may_extend(l) && now + window_ >= l.next_extend && now < l.until) {
        return {.step = watch_step::extend, .at = now};
    }
    if (now >= l.until) {
        return {.step = watch_step::declare_lost};
    }
    return next(l);
}

watch_action watchdog_fsm::extension_done(watched_lock& l, clock::time_point start,
                                          const tally& answers,
                                          clock::time_point now) const noexcept
{
    // Released or lost meanwhile: whoever did that took it out of the watch.
    if (!l.owns || l.lost) {
        return {.step = watch_step::stop};
    }
    const auto until = rules_.until_after(start);
    switch (judge_extension(answers, now, until)) {
        case extension_verdict::confirmed:
            l.until = until;
            l.extended_at = start;
            ++l.extensions;
            l.next_extend = start + period_;
            break;
        case extension_verdict::gone:
            return {.step = watch_step::declare_lost};
        case extension_verdict::failed:
            // Retried while validity lasts; `due` declares the loss once it has run out.
            l.next_extend = now + retry_after_;
            break;
    }
    return next(l);
}

watch_action watchdog_fsm::extended_elsewhere(watched_lock& l) const noexcept
{
    l.next_extend = std::max(l.next_extend, l.extended_at + period_);
    return next(l);
}

}  // namespace redlock::detail
