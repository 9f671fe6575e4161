// SPDX-License-Identifier: BSL-1.0
// The fenced store's public members; its requests are src/lock/fenced_store.cpp's.

#include <redlock/error.hpp>
#include <redlock/fenced_store.hpp>

#include "lock/fenced_store_impl.hpp"

#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <string>

namespace redlock {

fenced_store::fenced_store(const executor_type& ex, const config& cfg)
{
    if (cfg.nodes.size() != 1) {
        throw boost::system::system_error(
            make_error_code(error::invalid_argument),
            "fenced_store: config.nodes must name exactly one node (the protected resource's "
            "server), got " +
                std::to_string(cfg.nodes.size()));
    }
    if (std::string problem = validate(cfg); !problem.empty()) {
        throw boost::system::system_error(make_error_code(error::invalid_argument), problem);
    }
    impl_ = std::make_shared<detail::fenced_store_impl>(ex, cfg);
}

fenced_store::~fenced_store()
{
    if (impl_) {
        // The connection lives on the strand; requests still pending fail and complete.
        boost::asio::post(impl_->strand,
                          [node = impl_->node] { node->close("fenced_store closed"); });
    }
}

fenced_store::executor_type fenced_store::get_executor() const noexcept
{
    return impl_ ? impl_->executor : executor_type{};
}

void fenced_store::set_timeout(std::chrono::milliseconds timeout)
{
    impl_->timeout_ms = std::max<std::chrono::milliseconds::rep>(timeout.count(), 1);
}

std::string fenced_store::last_error() const
{
    std::lock_guard lock(impl_->error_mutex);
    return impl_->last_error;
}

}  // namespace redlock
