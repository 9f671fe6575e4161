// SPDX-License-Identifier: BSL-1.0
// The guard's ownership, and the release its destructor schedules. The public members are
// defined here, not with the guard's accessors in src/api/, because the lock layer makes and
// moves guards (an acquisition completes with one).

#include <redlock/guard.hpp>

#include "lock/client_impl.hpp"
#include "lock/lock_rounds.hpp"
#include "lock/lock_state.hpp"

#include <utility>

namespace redlock {

guard::guard() noexcept = default;

guard::guard(std::shared_ptr<detail::lock_state> state) noexcept
    : state_(std::move(state)), executor_(state_->mutex->client->executor)
{
}

// The executor is copied, not moved: a moved-from guard keeps it (see get_executor).
// NOLINTNEXTLINE(performance-move-constructor-init)
guard::guard(guard&& other) noexcept : state_(std::move(other.state_)), executor_(other.executor_)
{
}

guard& guard::operator=(guard&& other) noexcept
{
    if (this != &other) {
        release_in_background();
        state_ = std::move(other.state_);
        executor_ = other.executor_;
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

}  // namespace redlock
