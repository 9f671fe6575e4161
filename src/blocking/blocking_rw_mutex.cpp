// SPDX-License-Identifier: BSL-1.0
// The blocking read-write lock: each call takes or gives back the calling thread's hold, shared
// or exclusive, through an asynchronous operation on the client's io thread that the call
// waits for.

#include <redlock/blocking.hpp>
#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/rw_mutex.hpp>

#include "blocking/blocking_calls.hpp"
#include "blocking/blocking_client_core.hpp"
#include "blocking/blocking_rw_mutex_core.hpp"

#include <boost/system/errc.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

namespace redlock::blocking {
namespace detail {

namespace {

std::string call_name(const char* function, const rw_mutex_core& r)
{
    return "redlock::blocking::rw_mutex::" + std::string(function) + "('" + r.base.name() + "')";
}

const char* function_of(kind k, bool shared)
{
    switch (k) {
        case kind::wait:
            return shared ? "lock_shared" : "lock";
        case kind::once:
            return shared ? "try_lock_shared" : "try_lock";
        case kind::timed:
            break;
    }
    return shared ? "try_lock_shared_for" : "try_lock_for";
}

// A thread holds the lock once: asking again would wait for its own hold on the nodes.
void refuse_second_hold(rw_mutex_core& r, const std::string& name)
{
    std::lock_guard lock(r.m);
    if (r.own_hold() != r.held.end()) {
        fail(make_error_code(boost::system::errc::resource_deadlock_would_occur),
             name +
                 ": this thread holds it already (a thread holds a read-write lock once, "
                 "shared or exclusive)");
    }
}

// One acquisition on the nodes: until it gets the lock (by options), one attempt, or attempts
// until `deadline`.
std::tuple<error_code, guard> run_acquire(rw_mutex_core& r, kind k, bool shared,
                                          steady::time_point deadline)
{
    redlock::rw_mutex target = r.base;
    if (k == kind::timed) {
        target = r.client->async().make_rw_mutex(r.base.name(),
                                                 until_deadline(r.base.options(), deadline));
    }
    return client_core::wait(r.client->start_op<guard>(
        [&](auto token) {
            if (k == kind::once) {
                shared ? target.async_try_acquire_shared(std::move(token))
                       : target.async_try_acquire(std::move(token));
            } else {
                shared ? target.async_acquire_shared(std::move(token))
                       : target.async_acquire(std::move(token));
            }
        },
        true));
}

bool acquire(rw_mutex_core& r, kind k, bool shared, steady::time_point deadline)
{
    const std::string name = call_name(function_of(k, shared), r);
    client_core::call in_progress(*r.client, name);
    refuse_second_hold(r, name);
    return settle_acquisition(*r.client, r.m, r.held, r.last, run_acquire(r, k, shared, deadline),
                              name, k != kind::wait);
}

// Gives back the calling thread's hold of the mode `shared` (nothing when it has none), and
// waits for the nodes unless it runs on the io thread or the client is closed: then the
// guard's destructor releases it in the background (after a shutdown, which released every
// hold, there is nothing left).
void release(rw_mutex_core& r, bool shared)
{
    guard g;
    {
        std::lock_guard lock(r.m);
        const auto it = r.own_hold();
        if (it == r.held.end() || it->guard.shared() != shared) {
            return;
        }
        g = r.give_back(it);
    }
    client_core& c = *r.client;
    if (c.on_io_thread() || c.closed()) {
        return;
    }
    std::optional<client_core::call> in_progress;
    try {
        in_progress.emplace(c, call_name(shared ? "unlock_shared" : "unlock", r));
    } catch (const boost::system::system_error&) {
        return;  // shut down meanwhile
    }
    (void)client_core::wait(c.start_op<>([&](auto token) { g.async_release(std::move(token)); }));
    std::lock_guard lock(r.m);
    r.last = g.last_report();
}

// What the calling thread holds: its guard's `f(guard)`, or `none` when it holds nothing.
template <class F, class T>
T with_own_hold(rw_mutex_core& r, F f, T none)
{
    std::lock_guard lock(r.m);
    const auto it = r.own_hold();
    return it == r.held.end() ? none : f(it->guard);
}

}  // namespace
}  // namespace detail

void rw_mutex::lock()
{
    detail::acquire(*core_, detail::kind::wait, false, {});
}

bool rw_mutex::try_lock()
{
    return detail::acquire(*core_, detail::kind::once, false, {});
}

void rw_mutex::lock_shared()
{
    detail::acquire(*core_, detail::kind::wait, true, {});
}

bool rw_mutex::try_lock_shared()
{
    return detail::acquire(*core_, detail::kind::once, true, {});
}

bool rw_mutex::try_within(std::chrono::milliseconds timeout, bool shared)
{
    if (timeout.count() == 0) {
        return detail::acquire(*core_, detail::kind::once, shared, {});
    }
    return detail::acquire(*core_, detail::kind::timed, shared, detail::steady::now() + timeout);
}

void rw_mutex::unlock() noexcept
{
    try {
        detail::release(*core_, false);
    } catch (...) {
        // Out of memory: the entry expires on the nodes.
    }
}

void rw_mutex::unlock_shared() noexcept
{
    try {
        detail::release(*core_, true);
    } catch (...) {
        // Out of memory: the entry expires on the nodes.
    }
}

bool rw_mutex::owns_lock() const
{
    return detail::with_own_hold(
        *core_, [](const guard& g) { return g.owns_lock() && !g.shared(); }, false);
}

bool rw_mutex::owns_shared() const
{
    return detail::with_own_hold(
        *core_, [](const guard& g) { return g.owns_lock() && g.shared(); }, false);
}

std::uint64_t rw_mutex::fencing_token() const
{
    return detail::with_own_hold(
        *core_, [](const guard& g) { return g.fencing_token(); }, std::uint64_t{0});
}

report rw_mutex::last_report() const
{
    std::lock_guard lock(core_->m);
    return core_->last;
}

const std::string& rw_mutex::name() const noexcept
{
    return core_->base.name();
}

const options& rw_mutex::options() const noexcept
{
    return core_->base.options();
}

}  // namespace redlock::blocking
