// SPDX-License-Identifier: BSL-1.0
// The accessors of mutex; its operations are in acquire.cpp.

#include <redlock/mutex.hpp>

#include "lock/client_impl.hpp"
#include "lock/lock_state.hpp"

namespace redlock {

mutex::executor_type mutex::get_executor() const noexcept
{
    return state_->client->executor;
}

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

}  // namespace redlock
