// SPDX-License-Identifier: BSL-1.0
// The blocking semaphore: each call takes or gives back one permit of the calling thread,
// through an asynchronous operation on the client's io thread that the call waits for.

#include <redlock/blocking.hpp>
#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/semaphore.hpp>

#include "blocking/blocking_calls.hpp"
#include "blocking/blocking_client_core.hpp"
#include "blocking/blocking_semaphore_core.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

namespace redlock::blocking {
namespace detail {

namespace {

std::string call_name(const char* function, const semaphore_core& s)
{
    return "redlock::blocking::semaphore::" + std::string(function) + "('" + s.base.name() + "')";
}

// One acquisition on the nodes: until it gets a permit (by options), one attempt, or attempts
// until `deadline`.
std::tuple<error_code, guard> run_acquire(semaphore_core& s, kind k, steady::time_point deadline)
{
    redlock::semaphore target = s.base;
    if (k == kind::timed) {
        target = s.client->async().make_semaphore(s.base.name(), s.base.permits(),
                                                  until_deadline(s.base.options(), deadline));
    }
    return client_core::wait(s.client->start_op<guard>(
        [&](auto token) {
            if (k == kind::once) {
                target.async_try_acquire(std::move(token));
            } else {
                target.async_acquire(std::move(token));
            }
        },
        true));
}

// The calling thread's acquisition of one more permit: true once it holds it; false when the
// semaphore is full and `k` is once or timed.
bool acquire(semaphore_core& s, kind k, steady::time_point deadline)
{
    const std::string name = call_name(k == kind::wait ? "acquire" : "try_acquire", s);
    client_core::call in_progress(*s.client, name);
    return settle_acquisition(*s.client, s.m, s.held, s.last, run_acquire(s, k, deadline), name,
                              k != kind::wait);
}

// Takes the calling thread's newest permit out of `s`; an empty guard when it holds none.
guard take_own_permit(semaphore_core& s)
{
    std::lock_guard lock(s.m);
    const auto it = s.own_hold();
    return it == s.held.end() ? guard{} : s.give_back(it);
}

}  // namespace
}  // namespace detail

// ---- semaphore ----

void semaphore::acquire()
{
    detail::acquire(*core_, detail::kind::wait, {});
}

bool semaphore::try_acquire()
{
    return detail::acquire(*core_, detail::kind::once, {});
}

bool semaphore::try_acquire_within(std::chrono::milliseconds timeout)
{
    if (timeout.count() == 0) {
        return try_acquire();
    }
    return detail::acquire(*core_, detail::kind::timed, detail::steady::now() + timeout);
}

void semaphore::release()
{
    detail::semaphore_core& s = *core_;
    const std::string name = detail::call_name("release", s);
    detail::client_core::call in_progress(*s.client, name);
    guard g = detail::take_own_permit(s);
    if (!g.owns_lock()) {
        detail::fail(make_error_code(error::not_held),
                     name + ": the calling thread holds no permit of it");
    }
    auto [ec] = detail::client_core::wait(
        s.client->start_op<>([&](auto token) { g.async_release(std::move(token)); }));
    const report rep = g.last_report();
    {
        std::lock_guard lock(s.m);
        s.last = rep;
    }
    if (ec) {
        detail::fail(ec, detail::with_report(name, rep));
    }
}

std::size_t semaphore::held() const
{
    std::lock_guard lock(core_->m);
    const auto self = std::this_thread::get_id();
    return static_cast<std::size_t>(
        std::count_if(core_->held.begin(), core_->held.end(),
                      [self](const detail::thread_hold& h) { return h.thread == self; }));
}

report semaphore::last_report() const
{
    std::lock_guard lock(core_->m);
    return core_->last;
}

const std::string& semaphore::name() const noexcept
{
    return core_->base.name();
}

std::ptrdiff_t semaphore::permits() const noexcept
{
    return core_->base.permits();
}

std::size_t semaphore::quorum() const noexcept
{
    return core_->base.quorum();
}

const options& semaphore::options() const noexcept
{
    return core_->base.options();
}

}  // namespace redlock::blocking
