// SPDX-License-Identifier: BSL-1.0
// The accessors of semaphore; its operations are mutex's (acquire.cpp), on its lock_shape.

#include <redlock/semaphore.hpp>

#include "lock/client_impl.hpp"
#include "lock/lock_state.hpp"

namespace redlock {

semaphore::executor_type semaphore::get_executor() const noexcept
{
    return state_->client->executor;
}

const std::string& semaphore::name() const noexcept
{
    return state_->display_name();
}

std::ptrdiff_t semaphore::permits() const noexcept
{
    return static_cast<std::ptrdiff_t>(state_->permits);
}

std::size_t semaphore::quorum() const noexcept
{
    return state_->quorum;
}

const options& semaphore::options() const noexcept
{
    return state_->opts;
}

report semaphore::last_report() const
{
    return state_->get_report();
}

}  // namespace redlock
