// SPDX-License-Identifier: BSL-1.0
#include "engine/connection_fsm.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

connection_fsm::connection_fsm(std::chrono::milliseconds backoff_min,
                               std::chrono::milliseconds backoff_max)
    : backoff_min_(backoff_min),
      backoff_max_(std::max(backoff_min, backoff_max)),
      backoff_(backoff_min)
{
}

connection_fsm::admission connection_fsm::admit(clock::time_point now) noexcept
{
    switch (state_) {
        case state::connecting:
            return probing_ ? admission::refuse : admission::queue;
        case state::connected:
            return admission::queue;
        case state::closed:
            return admission::refuse;
        case state::disconnected:
            break;
    }
    if (now < retry_at_) {
        return admission::refuse;
    }
    state_ = state::connecting;
    return probing_ ? admission::probe : admission::connect;
}

bool connection_fsm::connected() noexcept
{
    state_ = state::connected;
    if (std::exchange(probing_, false)) {
        answered();  // the PING
    }
    return std::exchange(connected_before_, true);
}

void connection_fsm::failed(clock::time_point now) noexcept
{
    ++generation_;
    if (state_ != state::closed) {
        state_ = state::disconnected;
    }
    retry_at_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, backoff_max_);
}

void connection_fsm::stuck(clock::time_point now) noexcept
{
    failed(now);
    probing_ = true;
}

bool connection_fsm::should_leave(bool at_new_master) const noexcept
{
    // An attempt under way may have asked the Sentinels before the switch.
    return state_ == state::connecting || (state_ == state::connected && !at_new_master);
}

void connection_fsm::left_master(clock::time_point now) noexcept
{
    failed(now);
    retry_at_ = now;
    backoff_ = backoff_min_;
    probing_ = false;
}

void connection_fsm::close() noexcept
{
    ++generation_;
    state_ = state::closed;
}

std::chrono::milliseconds connection_fsm::wait_left(clock::time_point now) const noexcept
{
    if (state_ != state::disconnected || now >= retry_at_) {
        return std::chrono::milliseconds{0};
    }
    return std::chrono::ceil<std::chrono::milliseconds>(retry_at_ - now);
}

}  // namespace redlock::detail
