// SPDX-License-Identifier: BSL-1.0
// The guard's accessors; its ownership and the release its destructor schedules are in
// src/lock/guard_lifetime.cpp.

#include <redlock/guard.hpp>

#include "lock/client_impl.hpp"
#include "lock/lock_rounds.hpp"
#include "lock/lock_state.hpp"
#include "lock/watchdog.hpp"

#include <string>
#include <utility>

namespace redlock {

namespace {
const std::string empty_string;
}  // namespace

guard::executor_type guard::get_executor() const noexcept
{
    return executor_;
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

bool guard::shared() const noexcept
{
    return state_ && state_->mutex->rules->shared;
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
