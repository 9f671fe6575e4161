// SPDX-License-Identifier: BSL-1.0
// The accessors of rw_mutex; its operations are mutex's (acquire.cpp), on the lock_shape of
// each mode.

#include <redlock/rw_mutex.hpp>

#include "lock/client_impl.hpp"
#include "lock/lock_state.hpp"

namespace redlock {

rw_mutex::executor_type rw_mutex::get_executor() const noexcept
{
    return exclusive_->client->executor;
}

const std::string& rw_mutex::name() const noexcept
{
    return exclusive_->display_name();
}

const options& rw_mutex::options() const noexcept
{
    return exclusive_->opts;
}

report rw_mutex::last_report(bool shared) const
{
    return (shared ? shared_ : exclusive_)->get_report();
}

}  // namespace redlock
