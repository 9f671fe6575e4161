// SPDX-License-Identifier: BSL-1.0
// The accessors of election; its operations are in lock/election.cpp.

#include <redlock/election.hpp>

#include "lock/client_impl.hpp"
#include "lock/lock_state.hpp"

namespace redlock {

election::executor_type election::get_executor() const noexcept
{
    return state_->client->executor;
}

const std::string& election::name() const noexcept
{
    return state_->display_name();
}

const options& election::options() const noexcept
{
    return state_->opts;
}

report election::last_report() const
{
    return state_->get_report();
}

}  // namespace redlock
